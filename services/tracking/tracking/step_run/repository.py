"""Step queries and the step list declaration."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import Integer, Table, and_, func, literal, or_
from sqlalchemy import insert as sa_insert
from sqlalchemy import select as sa_select
from sqlalchemy import update as sa_update
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import flush_unique
from shared.listing import (
    Condition,
    Field,
    Kind,
    Listing,
    ListSpec,
    SortKey,
    column_field,
    fetch_page,
)
from tracking.core.listing import scope_conditions, scoped_fields, scoped_sort_keys
from tracking.model_version.repository import version_fields
from tracking.models import ArtifactVersion, PipelineRun, StepRun, StepRunArtifact
from tracking.pipeline_run.schemas import ExecutionStatus
from tracking.run_metadata.listing import metadata_field
from tracking.step_run.schemas import STEP_VERSION


def _cache_expired(cond: Condition) -> ColumnElement[bool]:
    """``true``: the step's cache has expired; ``false``: it has not (or never will)."""
    expires = col(StepRun.cache_expires_at)
    if cond.value:
        return and_(expires.is_not(None), expires < func.now())
    return or_(expires.is_(None), expires >= func.now())


def _exclude_retried(cond: Condition) -> ColumnElement[bool]:
    """``true``: only the last try of each step (retried ones left out)."""
    if cond.value:
        return col(StepRun.status) != ExecutionStatus.RETRIED.value
    return col(StepRun.id).is_not(None)


def _snapshot_of_run(cond: Condition) -> ColumnElement[bool]:
    runs = sa_select(col(PipelineRun.id)).where(
        column_field("snapshot_id", col(PipelineRun.snapshot_id), Kind.UUID).sql(cond)
    )
    return col(StepRun.pipeline_run_id).in_(runs)


STEPS = ListSpec(
    resource="step_run",
    id_column=col(StepRun.id),
    fields=[
        *scoped_fields(StepRun),
        column_field("status", col(StepRun.status), Kind.STRING),
        column_field("code_hash", col(StepRun.code_hash), Kind.STRING),
        column_field("cache_key", col(StepRun.cache_key), Kind.STRING),
        column_field("start_time", col(StepRun.start_time), Kind.DATETIME),
        column_field("end_time", col(StepRun.end_time), Kind.DATETIME),
        column_field("cache_expires_at", col(StepRun.cache_expires_at), Kind.DATETIME),
        column_field("pipeline_run_id", col(StepRun.pipeline_run_id), Kind.UUID),
        column_field("original_step_run_id", col(StepRun.original_step_run_id), Kind.UUID),
        column_field("version", literal(STEP_VERSION, Integer), Kind.INT),
        *version_fields(col(StepRun.model_version_id)),
        Field(
            name="snapshot_id",
            kind=Kind.UUID,
            build=_snapshot_of_run,
            description="The snapshot of the step's run",
        ),
        Field(
            name="cache_expired",
            kind=Kind.BOOL,
            build=_cache_expired,
            description="Whether the step's cache has expired",
        ),
        Field(
            name="exclude_retried",
            kind=Kind.BOOL,
            build=_exclude_retried,
            description="Leave out steps that were retried",
        ),
        metadata_field(
            "step_run",
            col(StepRun.id),
            "'key:value' or 'key:operator:value' on the step's metadata",
        ),
    ],
    sort_keys=[
        *scoped_sort_keys(StepRun),
        SortKey("status", col(StepRun.status)),
        SortKey("start_time", col(StepRun.start_time)),
        SortKey("end_time", col(StepRun.end_time)),
    ],
)


def _table(model: Any) -> Table:
    return model.__table__  # type: ignore[no-any-return]


class StepRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def read(self, step_id: uuid.UUID) -> Any | None:
        query = sa_select(*_table(StepRun).columns).where(col(StepRun.id) == step_id)
        return (await self.session.exec(query)).first()  # type: ignore[call-overload]

    async def page_of_run(
        self,
        listing: Listing,
        run_id: uuid.UUID,
        project_id: uuid.UUID | None = None,
        user_id: uuid.UUID | None = None,
    ) -> tuple[int, list[Any]]:
        """A page of the run's steps (``GET /runs/{id}/steps``), filtered as listed, of
        ``project_id`` and by ``user_id`` when given."""
        statement = sa_select(*_table(StepRun).columns)
        scope = scope_conditions(
            [
                (col(StepRun.pipeline_run_id), run_id),
                (col(StepRun.project_id), project_id),
                (col(StepRun.user_id), user_id),
            ]
        )
        return await fetch_page(self.session, STEPS, listing, statement, scope=scope, core=True)

    async def stop_watching(self, run_id: uuid.UUID) -> None:
        """No step of the run has its heartbeats watched any more."""
        statement = (
            sa_update(_table(StepRun))
            .where(col(StepRun.pipeline_run_id) == run_id)
            .values(heartbeat_threshold=None)
        )
        await self.session.exec(statement)

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

    async def ids_by_name(self, run_id: uuid.UUID, names: Sequence[str]) -> list[uuid.UUID]:
        """The ids of the run's steps named ``names`` (retried tries left out)."""
        if not names:
            return []
        query = (
            sa_select(col(StepRun.id))
            .where(
                col(StepRun.pipeline_run_id) == run_id,
                col(StepRun.name).in_(list(names)),
                col(StepRun.status) != ExecutionStatus.RETRIED.value,
            )
            .order_by(col(StepRun.created))
        )
        return list((await self.session.exec(query)).scalars().all())  # type: ignore[call-overload]

    async def links_of(self, step_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, list[Any]]:
        """The links of each of ``step_ids``, in one query."""
        found: dict[uuid.UUID, list[Any]] = {step_id: [] for step_id in step_ids}
        if step_ids:
            query = (
                sa_select(*_table(StepRunArtifact).columns)
                .where(col(StepRunArtifact.step_id).in_(list(step_ids)))
                .order_by(col(StepRunArtifact.direction), col(StepRunArtifact.name))
            )
            for link in (await self.session.exec(query)).all():  # type: ignore[call-overload]
                found[link.step_id].append(link)
        return found

    async def versions_in(self, ids: Sequence[uuid.UUID], project_id: uuid.UUID) -> set[uuid.UUID]:
        """Which of ``ids`` are artifact versions of the project."""
        query = sa_select(col(ArtifactVersion.id)).where(
            col(ArtifactVersion.id).in_(list(ids)), col(ArtifactVersion.project_id) == project_id
        )
        return set((await self.session.exec(query)).scalars().all())  # type: ignore[call-overload]
