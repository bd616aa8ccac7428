"""Wait condition queries: the list's declaration (the reference's filters: the run by
name or id, type, status, resolution, who resolved it and when, metadata), a condition's
row, a run's pending one, and the runs a page's conditions belong to."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Select, Table
from sqlalchemy import select as sa_select
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute
from shared.listing import Kind, ListSpec, SortKey, base_fields, column_field, name_or_id
from shared.users import user_field
from tracking.core.repository import rendered_columns
from tracking.models import PipelineRun, RunWaitCondition
from tracking.run_metadata.listing import metadata_field
from tracking.run_metadata.schemas import MetadataResourceTypes

W = RunWaitCondition


def _table(model: Any) -> Table:
    return model.__table__  # type: ignore[no-any-return]


RUN_WAIT_CONDITIONS = ListSpec(
    resource="run_wait_condition",
    id_column=col(W.id),
    fields=[
        *base_fields(col(W.id), col(W.created), col(W.updated)),
        column_field("name", col(W.name), Kind.STRING),
        user_field(col(W.user_id)),
        dataclasses.replace(
            user_field(col(W.resolved_by_user_id)),
            name="resolved_by",
            description="The user who resolved the condition: name, full name or id",
        ),
        name_or_id(
            "pipeline_run",
            col(W.run_id),
            target_id=col(PipelineRun.id),
            target_names=[col(PipelineRun.name)],
            description="The pipeline run: name or id",
        ),
        column_field("type", col(W.type), Kind.STRING),
        column_field("status", col(W.status), Kind.STRING),
        column_field("resolution", col(W.resolution), Kind.STRING),
        column_field("resolved_at", col(W.resolved_at), Kind.DATETIME),
        metadata_field(
            MetadataResourceTypes.WAIT_CONDITION.value, col(W.id), "Metadata of the condition"
        ),
    ],
    sort_keys=[
        SortKey("created", col(W.created)),
        SortKey("updated", col(W.updated)),
        SortKey("id", col(W.id)),
        SortKey("name", col(W.name)),
        SortKey("user", col(W.user_id)),
    ],
)

_COLUMNS = sa_select(*rendered_columns(_table(W)))


class ConditionItem(NamedTuple):
    """A condition's row, its run's row and (hydrated) its metadata."""

    condition: Any
    run: Any
    run_metadata: dict[str, Any] | None = None

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.condition.user_id  # type: ignore[no-any-return]


class RunWaitConditionRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    def columns(self) -> Select[Any]:
        return _COLUMNS

    async def read(self, condition_id: uuid.UUID) -> Any | None:
        query = _COLUMNS.where(col(W.id) == condition_id)
        return (await core_execute(self.session, query, {})).first()

    async def locked(self, condition_id: uuid.UUID) -> RunWaitCondition | None:
        """The condition to change, locked until the transaction ends (a resolution and a
        lease update of the same condition are applied one after the other)."""
        query = sa_select(W).where(col(W.id) == condition_id).with_for_update()
        found: RunWaitCondition | None = (await self.session.exec(query)).scalars().first()  # type: ignore[call-overload]
        return found

    async def of_run(self, run_id: uuid.UUID, name: str) -> RunWaitCondition | None:
        query = sa_select(W).where(col(W.run_id) == run_id, col(W.name) == name)
        found: RunWaitCondition | None = (await self.session.exec(query)).scalars().first()  # type: ignore[call-overload]
        return found

    async def pending_of(self, run_id: uuid.UUID) -> bool:
        query = sa_select(col(W.id)).where(col(W.run_id) == run_id, col(W.status) == "pending")
        return (await core_execute(self.session, query.limit(1), {})).first() is not None

    async def pending_of_runs(self, run_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Any]:
        """Each run's pending condition (a run has one at most), by run id (one query on
        the (run_id, status) index)."""
        if not run_ids:
            return {}
        query = _COLUMNS.where(col(W.run_id).in_(list(run_ids)), col(W.status) == "pending")
        return {row.run_id: row for row in (await core_execute(self.session, query, {})).all()}

    async def lock_run(self, run_id: uuid.UUID) -> None:
        """One condition is created for a run at a time (its pending check holds)."""
        query = sa_select(col(PipelineRun.id)).where(col(PipelineRun.id) == run_id)
        await self.session.exec(query.with_for_update())  # type: ignore[call-overload]
