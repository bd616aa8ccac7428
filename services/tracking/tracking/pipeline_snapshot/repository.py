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
from tracking.core.listing import page_scope, query_extras
from tracking.core.repository import rendered_columns
from tracking.core.schemas import ScopedListQuery
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
from tracking.pipeline_snapshot.schemas import Snapshot
from tracking.project.scope import resolve_project_ref
from tracking.tag.service import TagService, tags_field, tags_sort

S = PipelineSnapshot
TAG_RESOURCE = "pipeline_snapshot"


def _table(model: Any) -> Table:
    return model.__table__  # type: ignore[no-any-return]


def _when_true(name: str, condition: Callable[[], Any], description: str) -> Field:
    """A flag that filters only when true (``false`` leaves the list as it is), as the
    reference's ``named_only``, ``runnable`` and ``deployable``."""

    def build(cond: Condition) -> ColumnElement[bool]:
        return condition() if cond.value is True else true()

    return Field(name=name, kind=Kind.BOOL, build=build, description=description)


def _runnable() -> Any:
    """Built on a remote (not local) image build with a stack."""
    return exists().where(
        col(PipelineBuild.id) == col(S.build_id),
        col(PipelineBuild.is_local).is_(False),
        col(PipelineBuild.stack_id).is_not(None),
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
        name_or_id(
            "pipeline",
            col(S.pipeline_id),
            target_id=col(Pipeline.id),
            target_names=[col(Pipeline.name)],
            description="Pipeline name or ID",
        ),
        name_or_id(
            "stack",
            col(S.stack_id),
            target_id=col(Stack.id),
            target_names=[col(Stack.name)],
            description="Stack name or ID",
        ),
        column_field("build_id", col(S.build_id), Kind.UUID),
        column_field("schedule_id", col(S.schedule_id), Kind.UUID),
        column_field("source_snapshot_id", col(S.source_snapshot_id), Kind.UUID),
        _when_true("runnable", _runnable, "Only snapshots that can be run."),
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


class SnapshotListQuery(ScopedListQuery):
    """``project_name_or_id`` (the query parameter) overrides ``project``."""

    project_name_or_id: str | None = None


LIST_QUERY = SNAPSHOTS.query_model(extra=query_extras(SnapshotListQuery))
_SCOPE = {by_user: page_scope(_table(S), by_user) for by_user in (False, True)}
_COLUMNS = sa_select(*_table(S).columns)
_PIPELINES = sa_select(*rendered_columns(_table(Pipeline)))


async def snapshot_page(
    session: AsyncSession, listing: Listing, query: SnapshotListQuery
) -> tuple[int, list[Snapshot]]:
    """The page's snapshots, each with its pipeline and stack (one query per kind)."""
    project = await resolve_project_ref(session, query.project_name_or_id or query.project)
    params: dict[str, Any] = {"scope_project": project.id}
    if query.scope_user is not None:
        params["scope_user"] = query.scope_user
    scope = _SCOPE[query.scope_user is not None]
    total, rows = await fetch_page(
        session, SNAPSHOTS, listing, _COLUMNS, scope=scope, params=params, core=True
    )
    return total, await _items(session, rows)


async def _items(session: AsyncSession, rows: Sequence[Any]) -> list[Snapshot]:
    pipeline_ids = {row.pipeline_id for row in rows if row.pipeline_id is not None}
    stack_ids = {row.stack_id for row in rows if row.stack_id is not None}
    pipelines: dict[uuid.UUID, Any] = {}
    if pipeline_ids:
        found = await session.exec(_PIPELINES.where(col(Pipeline.id).in_(pipeline_ids)))  # type: ignore[call-overload]
        pipelines = {row.id: row for row in found.all()}
    stacks: dict[uuid.UUID, Any] = {}
    if stack_ids:
        found = await session.exec(select(Stack).where(col(Stack.id).in_(stack_ids)))
        stacks = {stack.id: stack for stack in found.all()}
    tags = await TagService(session).for_resources(TAG_RESOURCE, [row.id for row in rows])
    return [
        Snapshot(
            row, pipelines.get(row.pipeline_id), stacks.get(row.stack_id), tags.get(row.id, ())
        )
        for row in rows
    ]


ARTIFACT_STORE = "artifact_store"


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

    async def read(self, snapshot_id: uuid.UUID) -> Any | None:
        query = sa_select(*self.table.columns).where(col(PipelineSnapshot.id) == snapshot_id)
        return (await self.session.exec(query)).first()  # type: ignore[call-overload]

    async def delete(self, snapshot_id: uuid.UUID) -> None:
        statement = sa_delete(self.table).where(col(PipelineSnapshot.id) == snapshot_id)
        await self.session.exec(statement)

    async def insert(self, values: dict[str, Any]) -> None:
        await self.session.exec(sa_insert(self.table).values(values))
