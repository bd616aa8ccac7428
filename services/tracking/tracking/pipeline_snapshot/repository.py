"""Snapshot queries: the snapshot list's declaration with the reference's filters (by
pipeline or stack name or id, build, schedule, trigger, tags; named, runnable, deployable
or deployed only) and sort keys, its pages, a snapshot's row and its stack's artifact
store."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Table, exists, func, not_, true
from sqlalchemy import delete as sa_delete
from sqlalchemy import insert as sa_insert
from sqlalchemy import select as sa_select
from sqlalchemy import update as sa_update
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import (
    Condition,
    Field,
    Kind,
    Listing,
    ListSpec,
    SortKey,
    base_fields,
    column_field,
    fetch_page,
    name_or_id,
)
from shared.users import user_field
from tracking.core.listing import page_scope
from tracking.core.repository import rendered_columns
from tracking.models import (
    Deployment,
    Pipeline,
    PipelineBuild,
    PipelineSnapshot,
    Stack,
    StackComponent,
    StackComposition,
    TriggerSnapshot,
)
from tracking.tag.repository import tags_field, tags_sort

S = PipelineSnapshot
TAG_RESOURCE = "pipeline_snapshot"
ARTIFACT_STORE = "artifact_store"


def _table(model: Any) -> Table:
    return model.__table__  # type: ignore[no-any-return]


def _when_true(name: str, condition: Callable[[], Any], description: str) -> Field:
    """A flag that filters only when true (``false`` leaves the list as it is), as the
    reference's ``named_only``, ``runnable`` and ``deployable``."""

    def build(cond: Condition) -> ColumnElement[bool]:
        return condition() if cond.value is True else true()

    return Field(name=name, kind=Kind.BOOL, build=build, description=description)


def built_to_run() -> Any:
    """The snapshot (correlated) is built on a remote (not local) image build with a
    stack: as the reference tells a runnable snapshot, a templatable run (of such a
    snapshot) and a runnable template (from one)."""
    return exists().where(
        col(PipelineBuild.id) == col(S.build_id),
        col(PipelineBuild.is_local).is_(False),
        col(PipelineBuild.stack_id).is_not(None),
    )


# A snapshot's pipeline and stack, by name or id (the snapshot list's filters, and those
# of the lists whose rows have a snapshot).
SNAPSHOT_PIPELINE = name_or_id(
    "pipeline",
    col(S.pipeline_id),
    target_id=col(Pipeline.id),
    target_names=[col(Pipeline.name)],
    description="Pipeline name or ID",
)
SNAPSHOT_STACK = name_or_id(
    "stack",
    col(S.stack_id),
    target_id=col(Stack.id),
    target_names=[col(Stack.name)],
    description="Stack name or ID",
)


def _deployable() -> Any:
    """Built, on a stack with a deployer."""
    deployer = exists().where(
        col(StackComposition.stack_id) == col(S.stack_id),
        col(StackComponent.id) == col(StackComposition.component_id),
        col(StackComponent.type) == "deployer",
    )
    return col(S.build_id).is_not(None) & deployer


def _deployed(cond: Condition) -> ColumnElement[bool]:
    deployed = exists().where(col(Deployment.snapshot_id) == col(S.id))
    if cond.value is None:
        return true()
    return deployed if cond.value else not_(deployed)


def _trigger(cond: Condition) -> ColumnElement[bool]:
    attached = sa_select(col(TriggerSnapshot.snapshot_id)).where(
        col(TriggerSnapshot.trigger_id) == cond.value
    )
    return col(S.id).in_(attached)


def _name_of(model: Any, foreign_key: Any) -> Any:
    return sa_select(col(model.name)).where(col(model.id) == foreign_key).scalar_subquery()


SNAPSHOTS = ListSpec(
    resource="pipeline_snapshot",
    id_column=col(S.id),
    fields=[
        *base_fields(col(S.id), col(S.created), col(S.updated)),
        user_field(col(S.user_id)),
        tags_field(TAG_RESOURCE, col(S.id)),
        column_field("name", col(S.name), Kind.STRING),
        _when_true("named_only", lambda: col(S.name).is_not(None), "Only named snapshots."),
        SNAPSHOT_PIPELINE,
        SNAPSHOT_STACK,
        column_field("build_id", col(S.build_id), Kind.UUID),
        column_field("schedule_id", col(S.schedule_id), Kind.UUID),
        column_field("source_snapshot_id", col(S.source_snapshot_id), Kind.UUID),
        _when_true("runnable", built_to_run, "Only snapshots that can be run."),
        _when_true("deployable", _deployable, "Only snapshots that can be deployed."),
        Field(
            name="deployed",
            kind=Kind.BOOL,
            build=_deployed,
            description="Only snapshots with (true) or without (false) a deployment.",
        ),
        Field(
            name="trigger_id",
            kind=Kind.UUID,
            build=_trigger,
            description="Only snapshots attached to this trigger.",
        ),
    ],
    sort_keys=[
        SortKey("created", col(S.created)),
        SortKey("updated", col(S.updated)),
        SortKey("id", col(S.id)),
        SortKey("name", col(S.name)),
        SortKey("user", col(S.user_id)),
        tags_sort(TAG_RESOURCE, col(S.id)),
        SortKey("pipeline", _name_of(Pipeline, col(S.pipeline_id))),
        SortKey("stack", _name_of(Stack, col(S.stack_id))),
        SortKey(
            "deployment",
            sa_select(func.min(col(Deployment.name)))
            .where(col(Deployment.snapshot_id) == col(S.id))
            .scalar_subquery(),
        ),
    ],
)


_SCOPE = {by_user: page_scope(_table(S), by_user) for by_user in (False, True)}
_COLUMNS = sa_select(*_table(S).columns)
_PIPELINES = sa_select(*rendered_columns(_table(Pipeline)))


class SnapshotStoreRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def artifact_store(self, stack_id: uuid.UUID) -> Any | None:
        """The stack's artifact store component, if it has one."""
        query = (
            sa_select(StackComponent)
            .join(StackComposition, col(StackComposition.component_id) == col(StackComponent.id))
            .where(
                col(StackComposition.stack_id) == stack_id,
                col(StackComponent.type) == ARTIFACT_STORE,
            )
            .limit(1)
        )
        return (await self.session.exec(query)).scalars().first()  # type: ignore[call-overload]


class SnapshotRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.table: Table = PipelineSnapshot.__table__  # type: ignore[attr-defined]

    async def page(
        self, listing: Listing, project_id: uuid.UUID, scope_user: uuid.UUID | None
    ) -> tuple[int, list[Any]]:
        """A page of the project's snapshots (``scope_user``: of that creator only)."""
        params: dict[str, Any] = {"scope_project": project_id}
        if scope_user is not None:
            params["scope_user"] = scope_user
        scope = _SCOPE[scope_user is not None]
        return await fetch_page(
            self.session, SNAPSHOTS, listing, _COLUMNS, scope=scope, params=params, core=True
        )

    async def pipelines_and_stacks(
        self, rows: Sequence[Any]
    ) -> tuple[dict[uuid.UUID, Any], dict[uuid.UUID, Any]]:
        """The pipelines (their columns) and the stacks of the snapshots ``rows``, by id
        (one query per kind)."""
        pipeline_ids = {row.pipeline_id for row in rows if row.pipeline_id is not None}
        stack_ids = {row.stack_id for row in rows if row.stack_id is not None}
        pipelines: dict[uuid.UUID, Any] = {}
        if pipeline_ids:
            query = _PIPELINES.where(col(Pipeline.id).in_(pipeline_ids))
            found = await self.session.exec(query)  # type: ignore[call-overload]
            pipelines = {row.id: row for row in found.all()}
        stacks: dict[uuid.UUID, Any] = {}
        if stack_ids:
            found = await self.session.exec(select(Stack).where(col(Stack.id).in_(stack_ids)))
            stacks = {stack.id: stack for stack in found.all()}
        return pipelines, stacks

    async def stack(self, stack_id: uuid.UUID) -> Stack | None:
        return await self.session.get(Stack, stack_id)

    async def exists(self, model: Any, row_id: uuid.UUID) -> bool:
        """Whether ``model`` (a stack, a build, a schedule) has a row of ``row_id``."""
        return await self.session.get(model, row_id) is not None

    async def read(self, snapshot_id: uuid.UUID) -> Any | None:
        query = sa_select(*self.table.columns).where(col(PipelineSnapshot.id) == snapshot_id)
        return (await self.session.exec(query)).first()  # type: ignore[call-overload]

    async def delete(self, snapshot_id: uuid.UUID) -> None:
        statement = sa_delete(self.table).where(col(PipelineSnapshot.id) == snapshot_id)
        await self.session.exec(statement)

    async def named(self, pipeline_id: uuid.UUID, name: str) -> uuid.UUID | None:
        """The id of the pipeline's snapshot called ``name``, if any."""
        query = sa_select(col(PipelineSnapshot.id)).where(
            col(PipelineSnapshot.pipeline_id) == pipeline_id, col(PipelineSnapshot.name) == name
        )
        found: uuid.UUID | None = (await self.session.exec(query)).scalars().first()  # type: ignore[call-overload]
        return found

    async def update(self, snapshot_id: uuid.UUID, values: dict[str, Any]) -> None:
        statement = (
            sa_update(self.table).where(col(PipelineSnapshot.id) == snapshot_id).values(values)
        )
        await self.session.exec(statement)

    async def unlink_triggers(self, snapshot_id: uuid.UUID) -> None:
        """An unnamed snapshot is no trigger's target any more (the reference's rule)."""
        statement = sa_delete(TriggerSnapshot).where(
            col(TriggerSnapshot.snapshot_id) == snapshot_id
        )
        await self.session.exec(statement)

    async def insert(self, values: dict[str, Any]) -> None:
        await self.session.exec(sa_insert(self.table).values(values))
