"""Schedule queries and the list declaration."""

from __future__ import annotations

from sqlalchemy import Boolean, literal
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import Kind, ListSpec, SortKey, column_field
from tracking.core.listing import scoped_fields, scoped_sort_keys
from tracking.core.repository import ScopedRepository
from tracking.models import Schedule

SCHEDULES = ListSpec(
    resource="schedule",
    id_column=col(Schedule.id),
    fields=[
        *scoped_fields(Schedule),
        column_field("active", col(Schedule.active), Kind.BOOL),
        column_field("cron_expression", col(Schedule.cron_expression), Kind.STRING),
        column_field("pipeline_id", col(Schedule.pipeline_id), Kind.UUID),
        column_field("orchestrator_id", col(Schedule.orchestrator_id), Kind.UUID),
        column_field("catchup", col(Schedule.catchup), Kind.BOOL),
        column_field("start_time", col(Schedule.start_time), Kind.DATETIME),
        column_field("end_time", col(Schedule.end_time), Kind.DATETIME),
        column_field("run_once_start_time", col(Schedule.run_once_start_time), Kind.DATETIME),
        column_field(
            "interval_second",
            col(Schedule.interval_second),
            Kind.FLOAT,
            description="The interval between runs, in seconds",
        ),
        # A schedule here is deleted, never archived (the reference's soft deletion).
        column_field(
            "is_archived",
            literal(False, Boolean),
            Kind.BOOL,
            description="Whether the schedule is archived (none is here)",
        ),
    ],
    sort_keys=[*scoped_sort_keys(Schedule), SortKey("active", col(Schedule.active))],
)


class ScheduleRepository(ScopedRepository[Schedule]):
    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, Schedule)
