"""Run template queries: the list's declaration (the reference's filters through the
source snapshot: its pipeline, build and stack), a template's row with what it renders
with (runnable, latest run, tag ids), and the snapshots, pipelines and builds of a page."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Select, Table, exists, false, update
from sqlalchemy import select as sa_select
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute
from shared.listing import Field, Kind, ListSpec, SortKey, column_field
from tracking.core.listing import linked_field, scoped_fields, scoped_sort_keys
from tracking.core.repository import ScopedRepository, rendered_columns
from tracking.models import (
    Pipeline,
    PipelineBuild,
    PipelineRun,
    PipelineSnapshot,
    RunTemplate,
    StackComponent,
    StackComposition,
)
from tracking.pipeline_snapshot.repository import SNAPSHOT_PIPELINE, SNAPSHOT_STACK, built_to_run
from tracking.tag.repository import tag_ids_column, tags_field, tags_sort
from tracking.tag.schemas import TagRow

T = RunTemplate
S = PipelineSnapshot
TAG_RESOURCE = "run_template"


def _through_snapshot(name: str, inner: Any, description: str) -> Any:
    """A filter on the template's source snapshot."""
    return linked_field(name, col(T.source_snapshot_id), col(S.id), inner, description)


RUN_TEMPLATES = ListSpec(
    resource="run_template",
    id_column=col(T.id),
    fields=[
        *scoped_fields(T),
        column_field("hidden", col(T.hidden), Kind.BOOL),
        tags_field(TAG_RESOURCE, col(T.id)),
        _through_snapshot(
            "pipeline_id",
            column_field("pipeline_id", col(S.pipeline_id), Kind.UUID),
            "Pipeline associated with the template.",
        ),
        _through_snapshot(
            "build_id",
            column_field("build_id", col(S.build_id), Kind.UUID),
            "Build associated with the template.",
        ),
        _through_snapshot(
            "stack_id",
            column_field("stack_id", col(S.stack_id), Kind.UUID),
            "Stack associated with the template.",
        ),
        Field(
            name="code_repository_id",
            kind=Kind.UUID,
            build=lambda cond: false(),
            description="Code repository associated with the template (this server keeps "
            "no code references: no template has one).",
        ),
        _through_snapshot(
            "pipeline", SNAPSHOT_PIPELINE, "Name/ID of the pipeline associated with the template."
        ),
        _through_snapshot(
            "stack", SNAPSHOT_STACK, "Name/ID of the stack associated with the template."
        ),
    ],
    sort_keys=[
        *scoped_sort_keys(T),
        SortKey("hidden", col(T.hidden)),
        tags_sort(TAG_RESOURCE, col(T.id)),
    ],
)


def _runnable() -> Any:
    """The source snapshot is built remotely (not locally) with a stack, as the reference."""
    return exists().where(col(S.id) == col(T.source_snapshot_id), built_to_run())


def _latest_run(column: Any) -> Any:
    """``column`` of the newest run of a snapshot made from the template."""
    return (
        sa_select(column)
        .join(S, col(S.id) == col(PipelineRun.snapshot_id))
        .where(col(S.template_id) == col(T.id))
        .order_by(col(PipelineRun.created).desc())
        .limit(1)
        .scalar_subquery()
    )


class TemplateItem(NamedTuple):
    """A template's row (runnable, its latest run and tag ids included) with its source
    snapshot's row, that snapshot's pipeline and build (``None`` when absent), and tags."""

    template: Any
    snapshot: Any = None
    pipeline: Any = None
    build: Any = None
    tags: Sequence[TagRow] = ()

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.template.user_id  # type: ignore[no-any-return]


def _table(model: Any) -> Table:
    return model.__table__  # type: ignore[no-any-return]


_SNAPSHOTS = sa_select(*rendered_columns(_table(S)))
_PIPELINES = sa_select(*rendered_columns(_table(Pipeline)))
_BUILDS = sa_select(*rendered_columns(_table(PipelineBuild)))


class RunTemplateRepository(ScopedRepository[RunTemplate]):
    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, RunTemplate)

    def _columns(self) -> Select[Any]:
        return (
            super()
            ._columns()
            .add_columns(
                _runnable().label("runnable"),
                _latest_run(col(PipelineRun.id)).label("latest_run_id"),
                _latest_run(col(PipelineRun.status)).label("latest_run_status"),
                tag_ids_column(TAG_RESOURCE, col(T.id)),
            )
        )

    async def related(
        self, rows: Sequence[Any]
    ) -> tuple[dict[uuid.UUID, Any], dict[uuid.UUID, Any], dict[uuid.UUID, Any]]:
        """The source snapshots of ``rows``, and those snapshots' pipelines and builds, by
        id (one query per kind)."""
        snapshots = await self._rows(_SNAPSHOTS, S, {r.source_snapshot_id for r in rows})
        found = snapshots.values()
        pipelines = await self._rows(_PIPELINES, Pipeline, {s.pipeline_id for s in found})
        builds = await self._rows(_BUILDS, PipelineBuild, {s.build_id for s in found})
        return snapshots, pipelines, builds

    async def _rows(
        self, query: Select[Any], model: Any, ids: set[uuid.UUID | None]
    ) -> dict[uuid.UUID, Any]:
        ids.discard(None)
        if not ids:
            return {}
        result = await core_execute(self.session, query.where(col(model.id).in_(ids)), {})
        return {row.id: row for row in result.all()}

    async def stack_flavors(self, stack_id: uuid.UUID) -> list[tuple[str, str]]:
        """The (type, flavor) of each component of the stack."""
        query = (
            sa_select(col(StackComponent.type), col(StackComponent.flavor))
            .join(StackComposition, col(StackComposition.component_id) == col(StackComponent.id))
            .where(col(StackComposition.stack_id) == stack_id)
        )
        rows = (await self.session.exec(query)).all()  # type: ignore[call-overload]
        return [(row[0], row[1]) for row in rows]

    async def name_snapshot(
        self, snapshot_id: uuid.UUID, name: str, description: str | None
    ) -> None:
        """Give the snapshot the (visible) template's name and description."""
        statement = (
            update(_table(S))
            .where(col(S.id) == snapshot_id)
            .values(name=name, description=description)
        )
        await self.session.exec(statement)

    async def release_snapshots(self, template_id: uuid.UUID) -> None:
        """Snapshots made from the deleted template no longer name it (no foreign key)."""
        statement = (
            update(_table(S)).where(col(S.template_id) == template_id).values(template_id=None)
        )
        await self.session.exec(statement)
