"""Run and step queries and the run list declaration."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import Table, bindparam, func
from sqlalchemy import insert as sa_insert
from sqlalchemy import select as sa_select
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute, flush_unique
from shared.listing import Kind, ListSpec, SortKey, column_field
from tracking.core.listing import scoped_fields, scoped_sort_keys
from tracking.core.repository import ScopedRepository
from tracking.models import (
    ArtifactVersion,
    Pipeline,
    PipelineRun,
    PipelineSnapshot,
    StepRun,
    StepRunArtifact,
)

RUNS = ListSpec(
    resource="pipeline_run",
    id_column=col(PipelineRun.id),
    fields=[
        *scoped_fields(PipelineRun),
        column_field("status", col(PipelineRun.status), Kind.STRING),
        column_field("pipeline_id", col(PipelineRun.pipeline_id), Kind.UUID),
        column_field("snapshot_id", col(PipelineRun.snapshot_id), Kind.UUID),
        column_field("orchestrator_run_id", col(PipelineRun.orchestrator_run_id), Kind.STRING),
    ],
    sort_keys=[*scoped_sort_keys(PipelineRun), SortKey("status", col(PipelineRun.status))],
)


def _table(model: Any) -> Table:
    return model.__table__  # type: ignore[no-any-return]


def _by_ids(model: Any) -> Any:
    """``model``'s rows whose id is one of the ``ids`` parameter (built once)."""
    return sa_select(*_table(model).columns).where(
        col(model.id).in_(bindparam("ids", expanding=True))
    )


_SNAPSHOTS = _by_ids(PipelineSnapshot)
_PIPELINES = _by_ids(Pipeline)


class RunRepository(ScopedRepository[PipelineRun]):
    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, PipelineRun)

    async def by_name(self, project_id: uuid.UUID, name: str) -> uuid.UUID | None:
        query = sa_select(col(PipelineRun.id)).where(
            col(PipelineRun.project_id) == project_id, col(PipelineRun.name) == name
        )
        found = (await self.session.exec(query)).first()  # type: ignore[call-overload]
        return None if found is None else uuid.UUID(str(found[0]))

    async def by_trigger_execution(self, execution_id: uuid.UUID) -> uuid.UUID | None:
        query = sa_select(col(PipelineRun.id)).where(
            col(PipelineRun.trigger_execution_id) == execution_id
        )
        found = (await self.session.exec(query)).first()  # type: ignore[call-overload]
        return None if found is None else uuid.UUID(str(found[0]))

    async def runs_of(self, pipeline_id: uuid.UUID | None) -> int:
        query = sa_select(func.count()).where(col(PipelineRun.pipeline_id) == pipeline_id)
        return int((await self.session.exec(query)).one()[0])  # type: ignore[call-overload]

    async def snapshots(self, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, tuple[Any, Any]]:
        """Each snapshot of ``ids`` that exists with its pipeline (``None`` if it has none),
        as Core rows: two queries however many runs (a page) refer to them."""
        if not ids:
            return {}
        snapshots = (await core_execute(self.session, _SNAPSHOTS, {"ids": list(ids)})).all()
        pipeline_ids = list({s.pipeline_id for s in snapshots if s.pipeline_id is not None})
        pipelines: dict[uuid.UUID, Any] = {}
        if pipeline_ids:
            params = {"ids": pipeline_ids}
            rows = (await core_execute(self.session, _PIPELINES, params)).all()
            pipelines = {row.id: row for row in rows}
        return {s.id: (s, pipelines.get(s.pipeline_id)) for s in snapshots}


class StepRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def read(self, step_id: uuid.UUID) -> Any | None:
        query = sa_select(*_table(StepRun).columns).where(col(StepRun.id) == step_id)
        return (await self.session.exec(query)).first()  # type: ignore[call-overload]

    async def insert(self, step: StepRun, clash: Any) -> None:
        values = {c.name: getattr(step, c.name) for c in _table(StepRun).columns}
        await flush_unique(self.session, clash, sa_insert(_table(StepRun)).values(values))

    async def link(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            await self.session.exec(sa_insert(_table(StepRunArtifact)).values(list(rows)))

    async def links(self, step_id: uuid.UUID) -> list[Any]:
        query = (
            sa_select(*_table(StepRunArtifact).columns)
            .where(col(StepRunArtifact.step_id) == step_id)
            .order_by(col(StepRunArtifact.direction), col(StepRunArtifact.name))
        )
        return list((await self.session.exec(query)).all())  # type: ignore[call-overload]

    async def versions_in(self, ids: Sequence[uuid.UUID], project_id: uuid.UUID) -> set[uuid.UUID]:
        """Which of ``ids`` are artifact versions of the project."""
        query = sa_select(col(ArtifactVersion.id)).where(
            col(ArtifactVersion.id).in_(list(ids)), col(ArtifactVersion.project_id) == project_id
        )
        return set((await self.session.exec(query)).scalars().all())  # type: ignore[call-overload]
