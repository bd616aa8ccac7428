"""Run queries and the run list declaration (a run's steps: :mod:`tracking.step_run.repository`)."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

from sqlalchemy import Table, Text, Uuid, bindparam, cast, exists, func, null, or_, true
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
    Op,
    SortKey,
    column_field,
    name_or_id,
)
from shared.listing.sql import condition_sql
from tracking.core.listing import linked_field, scoped_fields, scoped_sort_keys
from tracking.core.repository import ScopedRepository
from tracking.model_version.repository import version_fields
from tracking.models import (
    ArtifactVersion,
    Model,
    ModelVersion,
    ModelVersionRun,
    Pipeline,
    PipelineRun,
    PipelineSnapshot,
    Stack,
    StackComposition,
    StepRun,
    StepRunArtifact,
)
from tracking.pipeline_run.dag import DagLink, DagStep
from tracking.pipeline_run.schemas import FINISHED, PLACEHOLDER, ExecutionStatus
from tracking.pipeline_snapshot.repository import SNAPSHOT_STACK, built_to_run
from tracking.project.repository import RUN_COUNT
from tracking.run_metadata.listing import metadata_field
from tracking.stack.repository import COMPOSED_COMPONENT
from tracking.tag.repository import tags_field, tags_sort

TAG_RESOURCE = "pipeline_run"
METADATA_RESOURCE = "pipeline_run"


def _linked_to_model_version(cond: Condition) -> ColumnElement[bool]:
    linked = sa_select(col(ModelVersionRun.pipeline_run_id)).where(
        condition_sql(col(ModelVersionRun.model_version_id), Kind.UUID, cond)
    )
    return col(PipelineRun.id).in_(linked)


def _of_snapshot(inner: Field, description: str) -> Field:
    """A filter on the run's snapshot: the run matches when its snapshot satisfies
    ``inner`` (a run without a snapshot never does, as in the reference's join). The
    snapshots are the subquery's own, even where the runs are joined to theirs (the run
    statistics' groups)."""

    def build(cond: Condition) -> ColumnElement[bool]:
        snapshots = sa_select(col(PipelineSnapshot.id)).where(inner.sql(cond)).correlate(None)
        return col(PipelineRun.snapshot_id).in_(snapshots)

    return Field(name=inner.name, kind=inner.kind, build=build, description=description)


def _snapshot_column(name: str, column: Any, description: str) -> Field:
    return _of_snapshot(column_field(name, column, Kind.UUID), description)


def _never_recorded(name: str, kind: Kind, description: str) -> Field:
    """A filter on what no run here records (a parent run, a code reference, a triggering
    step run or deployment): every run's value is null, so ``equals`` matches none and
    ``isnull`` all."""
    column = cast(null(), Uuid if kind is Kind.UUID else Text)
    return column_field(name, column, kind, description=description)


def _of_stack_component() -> Field:
    """Runs whose snapshot's stack has a component of that name or id."""
    stack = linked_field(
        "stack_component",
        col(PipelineSnapshot.stack_id),
        col(StackComposition.stack_id),
        COMPOSED_COMPONENT,
        "",
    )
    return _of_snapshot(stack, "Name or id of a stack component of the run's stack")


# A run is templatable, as the reference tells it, when its snapshot is built to run
# (``metadata.is_templatable``).
_TEMPLATABLE = (
    exists()
    .where(col(PipelineSnapshot.id) == col(PipelineRun.snapshot_id), built_to_run())
    .correlate(PipelineRun)
)
_IN_PROGRESS = col(PipelineRun.status).not_in(sorted(status.value for status in FINISHED))


def _root_runs_only(cond: Condition) -> ColumnElement[bool]:
    """``true``: runs without a parent run (every run here); anything else is ignored
    (matches all), as the reference ignores ``false``."""
    if cond.op is Op.EQUALS and cond.value is True:
        return cast(null(), Uuid).is_(None)
    return true()


def _name_of(column: Any, key: Any, target_id: Any) -> Any:
    """The name (``column``) of the row ``key`` points at, for sorting (null when none)."""
    return sa_select(column).where(target_id == key).scalar_subquery()


RUNS = ListSpec(
    resource="pipeline_run",
    id_column=col(PipelineRun.id),
    fields=[
        *scoped_fields(PipelineRun),
        column_field("status", col(PipelineRun.status), Kind.STRING),
        column_field(
            "in_progress",
            _IN_PROGRESS,
            Kind.BOOL,
            description="Whether the run is in progress (its status is not a finished one)",
        ),
        column_field("pipeline_id", col(PipelineRun.pipeline_id), Kind.UUID),
        column_field("snapshot_id", col(PipelineRun.snapshot_id), Kind.UUID),
        column_field("orchestrator_run_id", col(PipelineRun.orchestrator_run_id), Kind.STRING),
        column_field("index", col(PipelineRun.index), Kind.INT),
        column_field("start_time", col(PipelineRun.start_time), Kind.DATETIME),
        column_field("end_time", col(PipelineRun.end_time), Kind.DATETIME),
        column_field("trigger_id", col(PipelineRun.trigger_id), Kind.UUID),
        _snapshot_column("stack_id", col(PipelineSnapshot.stack_id), "The run's stack"),
        _snapshot_column("build_id", col(PipelineSnapshot.build_id), "The run's build"),
        _snapshot_column(
            "schedule_id", col(PipelineSnapshot.schedule_id), "The schedule of the run's snapshot"
        ),
        _snapshot_column(
            "template_id", col(PipelineSnapshot.template_id), "The run template it was run from"
        ),
        _snapshot_column(
            "source_snapshot_id",
            col(PipelineSnapshot.source_snapshot_id),
            "The snapshot the run's snapshot was made from",
        ),
        name_or_id(
            "pipeline",
            col(PipelineRun.pipeline_id),
            target_id=col(Pipeline.id),
            target_names=[col(Pipeline.name)],
            description="Name or id of the run's pipeline",
        ),
        linked_field(
            "pipeline_name",
            col(PipelineRun.pipeline_id),
            col(Pipeline.id),
            column_field("pipeline_name", col(Pipeline.name), Kind.STRING),
            "The name of the run's pipeline",
        ),
        _of_snapshot(SNAPSHOT_STACK, "Name or id of the run's stack"),
        _of_stack_component(),
        column_field(
            "templatable",
            _TEMPLATABLE,
            Kind.BOOL,
            description="Whether the run can be run again from a template",
        ),
        # Runs here record no code reference, parent run or triggering step run or
        # deployment: those filters see every run's as null.
        _never_recorded("code_repository_id", Kind.UUID, "The run's code repository"),
        _never_recorded("code_repository", Kind.STRING, "Name or id of the run's code repository"),
        _never_recorded("parent_run_id", Kind.UUID, "The parent of a nested run"),
        _never_recorded(
            "triggered_by_step_run_id", Kind.UUID, "The step run that triggered the run"
        ),
        _never_recorded(
            "triggered_by_deployment_id", Kind.UUID, "The deployment that triggered the run"
        ),
        Field(
            name="root_runs_only",
            kind=Kind.BOOL,
            build=_root_runs_only,
            description="Only runs without a parent run (ignored if false)",
        ),
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
        SortKey(
            "pipeline", _name_of(col(Pipeline.name), col(PipelineRun.pipeline_id), col(Pipeline.id))
        ),
        SortKey(
            "stack",
            sa_select(col(Stack.name))
            .join(PipelineSnapshot, col(PipelineSnapshot.stack_id) == col(Stack.id))
            .where(col(PipelineSnapshot.id) == col(PipelineRun.snapshot_id))
            .scalar_subquery(),
        ),
        SortKey(
            "model",
            sa_select(col(Model.name))
            .join(ModelVersion, col(ModelVersion.model_id) == col(Model.id))
            .where(col(ModelVersion.id) == col(PipelineRun.model_version_id))
            .scalar_subquery(),
        ),
        SortKey(
            "model_version",
            _name_of(
                col(ModelVersion.name), col(PipelineRun.model_version_id), col(ModelVersion.id)
            ),
        ),
    ],
)


def _table(model: Any) -> Table:
    return model.__table__  # type: ignore[no-any-return]


def _by_ids(model: Any) -> Any:
    """``model``'s rows whose id is one of the ``ids`` parameter (built once)."""
    return sa_select(*_table(model).columns).where(
        col(model.id).in_(bindparam("ids", expanding=True))
    )


# Each snapshot with whether its runs are templatable.
_SNAPSHOTS = sa_select(
    *_table(PipelineSnapshot).columns, built_to_run().label("templatable")
).where(col(PipelineSnapshot.id).in_(bindparam("ids", expanding=True)))
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
