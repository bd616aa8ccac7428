"""Run queries and the run list declaration (a run's steps: :mod:`tracking.step_run.repository`)."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

from sqlalchemy import Table, Text, Uuid, bindparam, cast, func, null, or_
from sqlalchemy import select as sa_select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute
from shared.listing import (
    Condition,
    Field,
    Kind,
    ListSpec,
    SortKey,
    column_field,
)
from shared.listing.sql import condition_sql
from tracking.core.listing import scoped_fields, scoped_sort_keys
from tracking.core.repository import ScopedRepository
from tracking.model_version.repository import version_fields
from tracking.models import (
    ArtifactVersion,
    ModelVersionRun,
    Pipeline,
    PipelineRun,
    PipelineSnapshot,
    Stack,
    StepRun,
    StepRunArtifact,
)
from tracking.pipeline_run.dag import DagLink, DagStep
from tracking.pipeline_run.schemas import PLACEHOLDER, ExecutionStatus
from tracking.project.repository import RUN_COUNT
from tracking.run_metadata.listing import metadata_field
from tracking.tag.repository import tags_field, tags_sort

TAG_RESOURCE = "pipeline_run"
METADATA_RESOURCE = "pipeline_run"


def _linked_to_model_version(cond: Condition) -> ColumnElement[bool]:
    linked = sa_select(col(ModelVersionRun.pipeline_run_id)).where(
        condition_sql(col(ModelVersionRun.model_version_id), Kind.UUID, cond)
    )
    return col(PipelineRun.id).in_(linked)


RUNS = ListSpec(
    resource="pipeline_run",
    id_column=col(PipelineRun.id),
    fields=[
        *scoped_fields(PipelineRun),
        column_field("status", col(PipelineRun.status), Kind.STRING),
        column_field("pipeline_id", col(PipelineRun.pipeline_id), Kind.UUID),
        column_field("snapshot_id", col(PipelineRun.snapshot_id), Kind.UUID),
        column_field("orchestrator_run_id", col(PipelineRun.orchestrator_run_id), Kind.STRING),
        column_field("index", col(PipelineRun.index), Kind.INT),
        column_field("start_time", col(PipelineRun.start_time), Kind.DATETIME),
        column_field("end_time", col(PipelineRun.end_time), Kind.DATETIME),
        column_field("trigger_id", col(PipelineRun.trigger_id), Kind.UUID),
        # No run here has a parent run (none is nested): the filter sees every one's as null.
        column_field("parent_run_id", cast(null(), Uuid), Kind.UUID),
        *version_fields(col(PipelineRun.model_version_id)),
        Field(
            name="linked_to_model_version_id",
            kind=Kind.UUID,
            build=_linked_to_model_version,
            description="A model version the run is linked to",
        ),
        tags_field(TAG_RESOURCE, col(PipelineRun.id)),
        metadata_field(
            METADATA_RESOURCE,
            col(PipelineRun.id),
            "'key:value' or 'key:operator:value' on the run's metadata",
        ),
    ],
    sort_keys=[
        *scoped_sort_keys(PipelineRun),
        SortKey("status", col(PipelineRun.status)),
        tags_sort(TAG_RESOURCE, col(PipelineRun.id)),
    ],
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
_STACKS = _by_ids(Stack)
_PLACEHOLDERS = [status.value for status in PLACEHOLDER]


def _text(column: Any) -> Any:
    """``column`` as PostgreSQL's text: ids as the DAG writes them and a configuration
    as its JSON, converted by no per-row Python type (the builder parses it once)."""
    return cast(column, Text)


_RAN = (
    col(StepRun.pipeline_run_id) == bindparam("run_id"),
    col(StepRun.status) != ExecutionStatus.RETRIED.value,
)
_DAG_STEPS = sa_select(
    _text(col(StepRun.id)),
    col(StepRun.name),
    col(StepRun.status),
    col(StepRun.start_time),
    col(StepRun.end_time),
    _text(col(StepRun.dag_config)),
).where(*_RAN)
_DAG_LINKS = (
    sa_select(
        _text(col(StepRunArtifact.step_id)),
        col(StepRunArtifact.direction),
        col(StepRunArtifact.name),
        _text(col(StepRunArtifact.artifact_version_id)),
        col(ArtifactVersion.type),
        col(ArtifactVersion.data_type),
        col(ArtifactVersion.save_type),
    )
    .join(StepRun, col(StepRun.id) == col(StepRunArtifact.step_id))
    .join(ArtifactVersion, col(ArtifactVersion.id) == col(StepRunArtifact.artifact_version_id))
    .where(*_RAN)
    .order_by(
        col(StepRunArtifact.step_id),
        col(StepRunArtifact.direction),
        col(StepRunArtifact.name),
        col(ArtifactVersion.created),
    )
)


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

    async def by_orchestrator_run(
        self, snapshot_id: uuid.UUID, orchestrator_run_id: str
    ) -> uuid.UUID | None:
        """The run an orchestrator already started for the snapshot under this id."""
        query = sa_select(col(PipelineRun.id)).where(
            col(PipelineRun.snapshot_id) == snapshot_id,
            col(PipelineRun.orchestrator_run_id) == orchestrator_run_id,
            col(PipelineRun.status).not_in(_PLACEHOLDERS),
        )
        found = (await self.session.exec(query)).first()  # type: ignore[call-overload]
        return None if found is None else uuid.UUID(str(found[0]))

    async def placeholder(
        self, snapshot_id: uuid.UUID, orchestrator_run_id: str | None
    ) -> PipelineRun | None:
        """The snapshot's announced run that no orchestrator has taken (or that this
        orchestrator run announced), locked until the transaction ends: one request
        takes it, a concurrent one then finds it taken."""
        query = (
            sa_select(PipelineRun)
            .where(
                col(PipelineRun.snapshot_id) == snapshot_id,
                or_(
                    col(PipelineRun.orchestrator_run_id) == orchestrator_run_id,
                    col(PipelineRun.orchestrator_run_id).is_(None),
                ),
                col(PipelineRun.status).in_(_PLACEHOLDERS),
            )
            .order_by(col(PipelineRun.orchestrator_run_id).desc().nulls_last())
            .limit(1)
            .with_for_update()
        )
        return (await self.session.exec(query)).scalars().first()  # type: ignore[call-overload,no-any-return]

    async def step_statuses(self, run_id: uuid.UUID) -> list[ExecutionStatus]:
        """The statuses of the run's steps, retried tries left out."""
        query = sa_select(col(StepRun.status)).where(
            col(StepRun.pipeline_run_id) == run_id,
            col(StepRun.status) != ExecutionStatus.RETRIED.value,
        )
        rows = (await self.session.exec(query)).scalars().all()  # type: ignore[call-overload]
        return [ExecutionStatus(status) for status in rows]

    async def stacks(self, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, Any]:
        if not ids:
            return {}
        rows = (await core_execute(self.session, _STACKS, {"ids": list(ids)})).all()
        return {row.id: row for row in rows}

    async def read_many(self, ids: Collection[uuid.UUID]) -> list[Any]:
        if not ids:
            return []
        query = self.columns().where(col(PipelineRun.id).in_(list(ids)))
        return list((await self.session.exec(query)).all())  # type: ignore[call-overload]

    async def rows_by_id(self, ids: Collection[uuid.UUID | None]) -> dict[uuid.UUID, Any]:
        """The runs of ``ids`` that exist (``None`` skipped), by id, to render nested."""
        found = await self.read_many({i for i in ids if i is not None})
        return {row.id: row for row in found}

    async def count_of(self, project_id: uuid.UUID) -> int:
        """The project's number of runs, as kept by triggers (no count of the runs)."""
        result = await core_execute(self.session, RUN_COUNT, {"project_id": project_id})
        return int(result.scalar_one())

    async def dag_steps(self, run_id: uuid.UUID) -> list[DagStep]:
        """The run's steps as its DAG draws them (retried tries left out)."""
        rows = (await core_execute(self.session, _DAG_STEPS, {"run_id": run_id})).all()
        return [DagStep._make(row) for row in rows]

    async def dag_links(self, run_id: uuid.UUID) -> list[DagLink]:
        """The artifact versions the run's steps (retried tries left out) read and
        produced, with what the DAG shows of each, in one query."""
        rows = (await core_execute(self.session, _DAG_LINKS, {"run_id": run_id})).all()
        return [DagLink._make(row) for row in rows]

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
