"""Artifact version queries and the list declaration."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Sequence
from typing import Any

from sqlalchemy import (
    Table,
    bindparam,
    delete,
    exists,
    func,
    not_,
)
from sqlalchemy import insert as sa_insert
from sqlalchemy import select as sa_select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute, flush_unique
from shared.listing import (
    Condition,
    Field,
    Kind,
    Listing,
    ListSpec,
    Op,
    SortKey,
    base_fields,
    column_field,
    fetch_page,
    name_or_id,
)
from shared.listing.sql import condition_sql
from shared.shapes import plain_rows
from shared.users import user_field
from tracking.core.listing import page_scope
from tracking.core.repository import rendered_columns
from tracking.models import (
    Artifact,
    ArtifactVersion,
    ArtifactVersionCount,
    ArtifactVisualization,
    Model,
    ModelVersion,
    ModelVersionArtifact,
    PipelineRun,
    RunMetadata,
    StepRun,
    StepRunArtifact,
)
from tracking.run_metadata.listing import metadata_field
from tracking.tag.repository import tags_field, tags_sort

TAG_RESOURCE = "artifact_version"
METADATA_RESOURCE = "artifact_version"
OUTPUT = "output"
INPUT = "input"

V = ArtifactVersion


def _table(model: Any) -> Table:
    return model.__table__  # type: ignore[no-any-return]


def is_used(version_id: Any) -> ColumnElement[bool]:
    """Whether a step run read or produced the version (the reference's "used")."""
    return exists().where(col(StepRunArtifact.artifact_version_id) == version_id)


def _has_custom_name(cond: Condition) -> ColumnElement[bool]:
    named = sa_select(col(Artifact.id)).where(
        condition_sql(col(Artifact.has_custom_name), Kind.BOOL, cond)
    )
    return col(V.artifact_id).in_(named)


def _named_through(
    name: str, target: Any, middle: Any, link_middle: Any, link_version: Any
) -> Callable[[Condition], ColumnElement[bool]]:
    """A ``name``-or-id filter on ``target`` rows (runs, models) that reaches a version
    through the ``middle`` rows pointing at them (steps, model versions) and a link table
    (``link_middle`` to ``link_version``)."""
    field = name_or_id(
        name,
        col(getattr(middle, f"{name}_id")),
        target_id=col(target.id),
        target_names=[col(target.name)],
    )

    def build(cond: Condition) -> ColumnElement[bool]:
        middles = sa_select(col(middle.id)).where(field.sql(cond))
        return col(V.id).in_(sa_select(link_version).where(link_middle.in_(middles)))

    return build


_pipeline_run = _named_through(
    "pipeline_run",
    PipelineRun,
    StepRun,
    col(StepRunArtifact.step_id),
    col(StepRunArtifact.artifact_version_id),
)
"""Versions a step of the named run (name or id) produced or read."""

_linked_to_model = _named_through(
    "model",
    Model,
    ModelVersion,
    col(ModelVersionArtifact.model_version_id),
    col(ModelVersionArtifact.artifact_version_id),
)


def _linkage(cond: Condition) -> ColumnElement[bool] | None:
    """``isnull:``/``isnotnull:`` on a version's model (version): not linked to any, or
    linked to one."""
    if cond.op not in (Op.IS_NULL, Op.IS_NOT_NULL):
        return None
    linked = col(V.id).in_(sa_select(col(ModelVersionArtifact.artifact_version_id)))
    return linked if cond.op is Op.IS_NOT_NULL else not_(linked)


def _model_version_id(cond: Condition) -> ColumnElement[bool]:
    """Versions linked to the model version."""
    if (linkage := _linkage(cond)) is not None:
        return linkage
    linked = sa_select(col(ModelVersionArtifact.artifact_version_id)).where(
        condition_sql(col(ModelVersionArtifact.model_version_id), Kind.UUID, cond)
    )
    return col(V.id).in_(linked)


def _model(cond: Condition) -> ColumnElement[bool]:
    """Versions linked to a version of the model (name or id)."""
    linkage = _linkage(cond)
    return linkage if linkage is not None else _linked_to_model(cond)


ARTIFACT_VERSIONS = ListSpec(
    resource="artifact_version",
    id_column=col(V.id),
    fields=[
        *base_fields(col(V.id), col(V.created), col(V.updated)),
        user_field(col(V.user_id)),
        name_or_id(
            "artifact",
            col(V.artifact_id),
            target_id=col(Artifact.id),
            target_names=[col(Artifact.name)],
            description="The artifact: name or id (filter syntax)",
            # Names are unique in a project, and a version's artifact is in its project.
            unique_within=(col(Artifact.project_id), "scope_project"),
        ),
        column_field("artifact_id", col(V.artifact_id), Kind.UUID),
        column_field("version", col(V.version), Kind.STRING),
        column_field("version_number", col(V.version_number), Kind.INT),
        column_field("uri", col(V.uri), Kind.STRING),
        column_field("materializer", col(V.materializer), Kind.STRING),
        column_field("type", col(V.type), Kind.STRING),
        column_field("data_type", col(V.data_type), Kind.STRING),
        column_field("save_type", col(V.save_type), Kind.STRING),
        column_field("content_hash", col(V.content_hash), Kind.STRING),
        column_field("item_count", col(V.item_count), Kind.INT),
        column_field("artifact_store_id", col(V.artifact_store_id), Kind.UUID),
        Field(
            name="model_version_id",
            kind=Kind.UUID,
            build=_model_version_id,
            description="A model version the version is linked to",
        ),
        Field(name="model", kind=Kind.STRING, build=_model, description="Model name or id"),
        Field(
            name="has_custom_name",
            kind=Kind.BOOL,
            build=_has_custom_name,
            description="Whether the artifact's name is custom",
        ),
        Field(
            name="pipeline_run",
            kind=Kind.STRING,
            build=_pipeline_run,
            description="A run (name or id) whose steps read or produced the version",
        ),
        metadata_field(
            METADATA_RESOURCE,
            col(V.id),
            "'key:value' or 'key:operator:value' on the version's metadata",
        ),
        tags_field(TAG_RESOURCE, col(V.id)),
    ],
    sort_keys=[
        *(
            SortKey(name, col(getattr(V, name)))
            for name in (
                "created",
                "updated",
                "id",
                "version",
                "version_number",
                "uri",
                "type",
                "materializer",
                "data_type",
                "save_type",
                "artifact_store_id",
                "content_hash",
                "item_count",
            )
        ),
        SortKey("user", col(V.user_id)),
        tags_sort(TAG_RESOURCE, col(V.id)),
    ],
)


def _in_ids(column: Any) -> ColumnElement[bool]:
    return column.in_(bindparam("ids", expanding=True))  # type: ignore[no-any-return]


def _producer(column: Any) -> Any:
    """``column`` of the step that produced the version (the first one, should several
    claim it), if any: one lookup in the links' version index."""
    return (
        sa_select(column)
        .select_from(StepRunArtifact)
        .join(StepRun, col(StepRun.id) == col(StepRunArtifact.step_id))
        .where(
            col(StepRunArtifact.artifact_version_id) == col(V.id),
            col(StepRunArtifact.direction) == OUTPUT,
        )
        .order_by(col(StepRun.created), col(StepRun.id))
        .limit(1)
        .scalar_subquery()
    )


# Built once, run with new values (no statement building per request).
# Rendered only: timestamps read in their wire form (see rendered_columns).
_VERSION_COLUMNS = sa_select(
    *rendered_columns(_table(V)),
    _producer(col(StepRun.id)).label("producer_step_run_id"),
    _producer(col(StepRun.pipeline_run_id)).label("producer_pipeline_run_id"),
)
_VERSION = _VERSION_COLUMNS.where(col(V.id) == bindparam("id", type_=_table(V).c.id.type))
_VERSIONS = _VERSION_COLUMNS.where(_in_ids(col(V.id)))
_ARTIFACTS = sa_select(*rendered_columns(_table(Artifact))).where(_in_ids(col(Artifact.id)))
_VISUALIZATIONS = (
    sa_select(*_table(ArtifactVisualization).columns)
    .where(_in_ids(col(ArtifactVisualization.artifact_version_id)))
    .order_by(col(ArtifactVisualization.position))
)
_RUN_METADATA = (
    sa_select(col(RunMetadata.resource_id), col(RunMetadata.key), col(RunMetadata.value))
    .where(
        col(RunMetadata.resource_type) == METADATA_RESOURCE,
        _in_ids(col(RunMetadata.resource_id)),
    )
    .order_by(col(RunMetadata.key))
)


# A page's scope (the project, the caller's own versions, unused ones), built once: the
# listing engine then runs statements built once per filter form (see fetch_page).
_SCOPES = {
    (by_user, unused): page_scope(_table(V), by_user)
    + ((not_(is_used(col(V.id))),) if unused else ())
    for by_user in (False, True)
    for unused in (False, True)
}
_PAGE_IDS = sa_select(col(V.id))
# The project's versions, kept by triggers (migration 0008): the unfiltered list's total.
_KEPT_COUNT = sa_select(func.coalesce(func.sum(col(ArtifactVersionCount.versions)), 0)).where(
    col(ArtifactVersionCount.project_id) == bindparam("project_id")
)


class ArtifactVersionRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def insert_artifact_if_new(self, values: dict[str, Any]) -> None:
        """The artifact of ``values``, unless its project has one of that name (made by a
        concurrent request, or before)."""
        table = Artifact.__table__  # type: ignore[attr-defined]
        await self.session.exec(postgresql_insert(table).values(values).on_conflict_do_nothing())

    async def read(self, version_id: uuid.UUID) -> Any | None:
        """The version's columns and its producer's ``producer_step_run_id`` and
        ``producer_pipeline_run_id`` (a Core row), to render."""
        return (await core_execute(self.session, _VERSION, {"id": version_id})).first()

    async def read_many(self, ids: Collection[uuid.UUID]) -> list[Any]:
        """The versions in ``ids`` (those that exist, as :meth:`read`), in no particular
        order."""
        return await self._rows(_VERSIONS, ids)

    async def _rows(self, statement: Any, keys: Collection[Any]) -> list[Any]:
        """The rows ``statement`` (one of the ``_VERSIONS`` statements) reads for ``keys``."""
        if not keys:
            return []
        rows = (await core_execute(self.session, statement, {"ids": list(keys)})).all()
        return list(plain_rows(rows))  # read by name a dozen times each while rendering

    async def get(self, version_id: uuid.UUID) -> ArtifactVersion | None:
        return await self.session.get(V, version_id)

    async def page(
        self,
        listing: Listing,
        project_id: uuid.UUID,
        scope_user: uuid.UUID | None,
        only_unused: bool,
    ) -> tuple[int, list[Any]]:
        """The total and the page's rows. The page's ids come first: an index holding the
        filtered and sorted columns (see the models) finds them without reading a row, and
        only the page's rows are read, where sorting whole rows would read every match."""
        params: dict[str, Any] = {"scope_project": project_id}
        if scope_user is not None:
            params["scope_user"] = scope_user
        scope = _SCOPES[(scope_user is not None, only_unused)]
        kept = None
        if not listing.conditions and scope_user is None and not only_unused:
            result = await core_execute(self.session, _KEPT_COUNT, {"project_id": project_id})
            kept = int(result.scalar_one())
        total, found = await fetch_page(
            self.session,
            ARTIFACT_VERSIONS,
            listing,
            _PAGE_IDS,
            scope=scope,
            params=params,
            core=True,
            total=kept,
        )
        ids = [row[0] for row in found]
        rows = {row.id: row for row in await self._rows(_VERSIONS, ids)}
        # A version deleted in between (PostgreSQL reads each statement's own snapshot).
        return total, [rows[i] for i in ids if i in rows]

    async def artifacts(self, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, Any]:
        rows = (await core_execute(self.session, _ARTIFACTS, {"ids": list(ids)})).all()
        return {row.id: row for row in rows}

    async def visualizations(self, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, list[Any]]:
        found: dict[uuid.UUID, list[Any]] = {}
        for row in (await core_execute(self.session, _VISUALIZATIONS, {"ids": list(ids)})).all():
            found.setdefault(row.artifact_version_id, []).append(row)
        return found

    async def run_metadata(self, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, dict[str, str]]:
        """Each version's metadata as JSON texts, by key."""
        found: dict[uuid.UUID, dict[str, str]] = {}
        for row in (await core_execute(self.session, _RUN_METADATA, {"ids": list(ids)})).all():
            found.setdefault(row.resource_id, {})[row.key] = row.value
        return found

    async def lock_artifact(self, artifact_id: uuid.UUID) -> Any | None:
        """The artifact's row, locked until the transaction ends, so concurrent creates of
        versions of one artifact number them one after another."""
        query = (
            sa_select(*_table(Artifact).columns)
            .where(col(Artifact.id) == artifact_id)
            .with_for_update()
        )
        return (await self.session.exec(query)).first()  # type: ignore[call-overload]

    async def artifact_by_name(self, project_id: uuid.UUID, name: str) -> uuid.UUID | None:
        query = sa_select(col(Artifact.id)).where(
            col(Artifact.project_id) == project_id, col(Artifact.name) == name
        )
        found = (await self.session.exec(query)).first()  # type: ignore[call-overload]
        return None if found is None else uuid.UUID(str(found[0]))

    async def next_number(self, artifact_id: uuid.UUID) -> int:
        query = sa_select(func.coalesce(func.max(col(V.version_number)), 0)).where(
            col(V.artifact_id) == artifact_id
        )
        return int((await self.session.exec(query)).one()[0]) + 1  # type: ignore[call-overload]

    async def insert_version(self, values: dict[str, Any], clash: Any) -> None:
        await flush_unique(self.session, clash, sa_insert(_table(V)).values(values))

    async def insert_rows(self, model: Any, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            await self.session.exec(sa_insert(_table(model)).values(list(rows)))

    async def used(self, version_id: uuid.UUID) -> bool:
        query = sa_select(is_used(version_id))
        return bool((await self.session.exec(query)).one()[0])  # type: ignore[call-overload]

    async def delete_versions(self, ids: Sequence[uuid.UUID]) -> None:
        """The versions with their metadata (visualizations go by cascade)."""
        if not ids:
            return
        await self.session.exec(
            delete(RunMetadata).where(
                col(RunMetadata.resource_type) == METADATA_RESOURCE,
                col(RunMetadata.resource_id).in_(ids),
            )
        )
        await self.session.exec(delete(V).where(col(V.id).in_(ids)))

    async def ids_of(self, artifact_id: uuid.UUID) -> list[uuid.UUID]:
        query = sa_select(col(V.id)).where(col(V.artifact_id) == artifact_id)
        return list((await self.session.exec(query)).scalars().all())  # type: ignore[call-overload]

    async def unused_in(self, project_id: uuid.UUID) -> list[uuid.UUID]:
        query = sa_select(col(V.id)).where(
            col(V.project_id) == project_id, not_(is_used(col(V.id)))
        )
        return list((await self.session.exec(query)).scalars().all())  # type: ignore[call-overload]

    async def empty_artifacts(self, project_id: uuid.UUID) -> list[uuid.UUID]:
        has_versions = exists().where(col(V.artifact_id) == col(Artifact.id))
        query = sa_select(col(Artifact.id)).where(
            col(Artifact.project_id) == project_id, not_(has_versions)
        )
        return list((await self.session.exec(query)).scalars().all())  # type: ignore[call-overload]

    async def delete_artifacts(self, ids: Sequence[uuid.UUID]) -> None:
        if ids:
            await self.session.exec(delete(Artifact).where(col(Artifact.id).in_(ids)))
