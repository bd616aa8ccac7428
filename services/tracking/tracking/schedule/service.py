"""Business rules for schedules: a way to run (cron, interval or once), an orchestrator
that is an orchestrator, a pipeline of the same project."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.errors import BadRequest
from shared.listing import Listing
from tracking.component.flavors import StackComponentType
from tracking.component.service import ComponentNotFound
from tracking.core.errors import NameTaken, ScopedNotFound
from tracking.core.schemas import ScopedListQuery
from tracking.core.service import ScopedService
from tracking.models import Schedule, StackComponent
from tracking.pipeline.service import PipelineService
from tracking.run_metadata.repository import RunMetadataRepository
from tracking.run_metadata.schemas import MetadataResourceTypes
from tracking.schedule.repository import SCHEDULES, ScheduleRepository
from tracking.schedule.schemas import ScheduleItem, ScheduleRequest, ScheduleUpdate


class ScheduleNotFound(ScopedNotFound):
    resource = "schedule"


class ScheduleAlreadyExists(NameTaken):
    resource = "schedule"


class ScheduleService(ScopedService[Schedule]):
    not_found = ScheduleNotFound
    name_taken = ScheduleAlreadyExists

    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, ScheduleRepository(session))

    async def list_page(
        self, listing: Listing, query: ScopedListQuery
    ) -> tuple[int, list[ScheduleItem]]:
        total, rows = await self.list_rows(SCHEDULES, listing, query)
        return total, await self._items(rows, hydrate=listing.hydrate)

    async def get(self, schedule_id: uuid.UUID) -> ScheduleItem:
        (item,) = await self._items([await self.read_row(schedule_id)])
        return item

    async def _items(self, rows: Sequence[Any], *, hydrate: bool = True) -> list[ScheduleItem]:
        """Each schedule with, hydrated, the metadata logged on it (one query)."""
        if not hydrate:
            return [ScheduleItem(row) for row in rows]
        metadata = await RunMetadataRepository(self.session).values(
            MetadataResourceTypes.SCHEDULE, [row.id for row in rows]
        )
        return [ScheduleItem(row, metadata.get(row.id, {})) for row in rows]

    async def update(self, schedule_id: uuid.UUID, update: ScheduleUpdate) -> ScheduleItem:
        """Deactivating a schedule stops the workload tokens scoped to it (on tracking at
        the next request, elsewhere within the services' ``workload_scope_cache_ttl``)."""
        schedule = await self.get_row(schedule_id)
        schedule.updated = utcnow()
        if update.cron_expression is not None:
            schedule.cron_expression = update.cron_expression
        if update.active is not None:
            schedule.active = update.active
        if update.name is not None:
            await self.rename(schedule, update.name)
        await self.session.flush()
        return await self.get(schedule_id)

    async def delete(self, schedule_id: uuid.UUID) -> None:
        await self.delete_row(schedule_id)

    async def create(self, request: ScheduleRequest, user_id: uuid.UUID) -> ScheduleItem:
        project = await self.project(request.project_ref())
        if not (request.cron_expression or request.interval_second or request.run_once_start_time):
            raise BadRequest(
                "Either a cron expression, an interval or a run-once start time is required "
                "to create a schedule."
            )
        if request.orchestrator_id is not None:
            orchestrator = await self.session.get(StackComponent, request.orchestrator_id)
            if orchestrator is None:
                raise ComponentNotFound(request.orchestrator_id)
            if orchestrator.type != StackComponentType.ORCHESTRATOR:
                raise BadRequest(
                    f"The stack component with ID {request.orchestrator_id} is a "
                    f"{orchestrator.type}, not an orchestrator."
                )
        if request.pipeline_id is not None:
            await PipelineService(self.session).in_project(request.pipeline_id, project.id)
        interval = request.interval_second
        schedule = Schedule(
            project_id=project.id,
            name=request.name,
            active=request.active,
            cron_expression=request.cron_expression,
            start_time=request.start_time,
            end_time=request.end_time,
            interval_second=interval.total_seconds() if interval is not None else None,
            catchup=request.catchup,
            run_once_start_time=request.run_once_start_time,
            orchestrator_id=request.orchestrator_id,
            pipeline_id=request.pipeline_id,
            user_id=user_id,
        )
        await self.insert(schedule, project)
        return ScheduleItem(schedule, {})
