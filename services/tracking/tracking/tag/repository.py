"""Tag queries and the list declaration; the resources a tag can be on, where they live
and the scope within which an exclusive tag is on one of them only; the ``tags`` filter
and sort key of every taggable resource's list, and the tags of a page's rows."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, String, Table, and_, bindparam, cast, delete, exists, func, not_
from sqlalchemy import select as sa_select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute
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
)
from shared.listing.sql import condition_sql
from shared.users import user_field
from tracking.core.listing import scope_conditions
from tracking.core.repository import rendered_columns
from tracking.models import (
    Artifact,
    ArtifactVersion,
    Deployment,
    Model,
    ModelVersion,
    Pipeline,
    PipelineRun,
    PipelineSnapshot,
    Tag,
    TagResource,
)
from tracking.tag.schemas import ColorVariants, TaggableResourceTypes


def _resource_type_field() -> Field:
    """``resource_type``: tags on at least one resource of a matching type."""

    def build(cond: Condition) -> ColumnElement[bool]:
        return exists().where(
            col(TagResource.tag_id) == col(Tag.id),
            condition_sql(col(TagResource.resource_type), Kind.ENUM, cond),
        )

    return Field(
        name="resource_type",
        kind=Kind.ENUM,
        enum=TaggableResourceTypes,
        build=build,
        description="Filter tags associated with a specific resource type.",
    )


TAGS = ListSpec(
    resource="tag",
    id_column=col(Tag.id),
    fields=[
        *base_fields(col(Tag.id), col(Tag.created), col(Tag.updated)),
        user_field(col(Tag.user_id)),
        column_field("name", col(Tag.name), Kind.STRING),
        column_field("color", col(Tag.color), Kind.ENUM, enum=ColorVariants),
        column_field("exclusive", col(Tag.exclusive), Kind.BOOL),
        _resource_type_field(),
    ],
    sort_keys=[
        *(
            SortKey(name, col(getattr(Tag, name)))
            for name in ("created", "updated", "id", "name", "color", "exclusive")
        ),
        SortKey("user", col(Tag.user_id)),
    ],
)


@dataclass(frozen=True)
class Taggable:
    """Where the resources of one type live and, for those an exclusive tag may be on,
    the column naming the scope within which it is on one of them only (a run's
    pipeline, a version's artifact …); ``scope`` reaches it from ``table``'s id."""

    table: Table
    scope: Any = None
    exclusive_on_update: bool = False


def _table(model: Any) -> Table:
    return model.__table__  # type: ignore[no-any-return]


def _deployment_scope() -> Any:
    """A deployment's scope is its snapshot's pipeline."""
    return (
        sa_select(col(PipelineSnapshot.pipeline_id))
        .where(col(PipelineSnapshot.id) == col(Deployment.snapshot_id))
        .scalar_subquery()
    )


TAGGABLE: dict[TaggableResourceTypes, Taggable] = {
    TaggableResourceTypes.ARTIFACT: Taggable(_table(Artifact)),
    TaggableResourceTypes.ARTIFACT_VERSION: Taggable(
        _table(ArtifactVersion), col(ArtifactVersion.artifact_id), exclusive_on_update=True
    ),
    TaggableResourceTypes.PIPELINE: Taggable(_table(Pipeline)),
    TaggableResourceTypes.PIPELINE_RUN: Taggable(
        _table(PipelineRun), col(PipelineRun.pipeline_id), exclusive_on_update=True
    ),
    TaggableResourceTypes.PIPELINE_SNAPSHOT: Taggable(
        _table(PipelineSnapshot), col(PipelineSnapshot.pipeline_id), exclusive_on_update=True
    ),
    TaggableResourceTypes.DEPLOYMENT: Taggable(_table(Deployment), _deployment_scope()),
    # No scope: as the reference, exclusive tags are refused on them.
    TaggableResourceTypes.MODEL: Taggable(_table(Model)),
    TaggableResourceTypes.MODEL_VERSION: Taggable(_table(ModelVersion)),
}
"""The taggable resources tracking holds (run templates are not here)."""


def _tagged_count() -> Any:
    return (
        sa_select(func.count())
        .select_from(_table(TagResource))
        .where(col(TagResource.tag_id) == col(Tag.id))
        .scalar_subquery()
        .label("tagged_count")
    )


_TAG_TABLE = _table(Tag)
_COLUMNS: Select[Any] = sa_select(*rendered_columns(_TAG_TABLE), _tagged_count())
_READ = _COLUMNS.where(col(Tag.id) == bindparam("id", type_=_TAG_TABLE.c.id.type))


class TagRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, tag_id: uuid.UUID) -> Tag | None:
        return await self.session.get(Tag, tag_id)

    async def read(self, tag_id: uuid.UUID) -> Any:
        """The tag's columns and its ``tagged_count``, to render."""
        return (await core_execute(self.session, _READ, {"id": tag_id})).first()

    async def page(self, listing: Listing, scope_user: uuid.UUID | None) -> tuple[int, list[Any]]:
        scope = scope_conditions([(col(Tag.user_id), scope_user)])
        return await fetch_page(self.session, TAGS, listing, _COLUMNS, scope=scope, core=True)

    async def existing(
        self, resource_type: TaggableResourceTypes, ids: set[uuid.UUID]
    ) -> set[uuid.UUID]:
        """Which of ``ids`` are resources of ``resource_type`` (none for types not here)."""
        taggable = TAGGABLE.get(resource_type)
        if taggable is None or not ids:
            return set()
        query = sa_select(taggable.table.c.id).where(taggable.table.c.id.in_(ids))
        return set((await self.session.exec(query)).scalars().all())  # type: ignore[call-overload]

    async def scopes(
        self, resource_type: TaggableResourceTypes, ids: set[uuid.UUID]
    ) -> dict[uuid.UUID, uuid.UUID | None]:
        """Each resource's exclusivity scope (see :class:`Taggable`)."""
        taggable = TAGGABLE[resource_type]
        query = sa_select(taggable.table.c.id, taggable.scope.label("scope")).where(
            taggable.table.c.id.in_(ids)
        )
        rows = (await self.session.exec(query)).all()  # type: ignore[call-overload]
        return {row.id: row.scope for row in rows}

    async def shared_scopes(
        self, tag_id: uuid.UUID, resource_type: TaggableResourceTypes
    ) -> list[uuid.UUID]:
        """The scopes in which ``tag_id`` is on more than one resource of the type."""
        taggable = TAGGABLE[resource_type]
        scope = taggable.scope.label("scope")
        query = (
            sa_select(scope)
            .select_from(taggable.table)
            .join(
                _table(TagResource),
                (col(TagResource.resource_id) == taggable.table.c.id)
                & (col(TagResource.resource_type) == resource_type.value),
            )
            .where(col(TagResource.tag_id) == tag_id, scope.is_not(None))
            .group_by(scope)
            .having(func.count() > 1)
        )
        return list((await self.session.exec(query)).scalars().all())  # type: ignore[call-overload]

    async def detach_others_in_scope(
        self,
        tag_id: uuid.UUID,
        resource_type: TaggableResourceTypes,
        resource_id: uuid.UUID,
        scope: uuid.UUID,
    ) -> None:
        """Take ``tag_id`` off the other resources of the type in ``scope``."""
        taggable = TAGGABLE[resource_type]
        in_scope = sa_select(taggable.table.c.id).where(taggable.scope == scope)
        await self.session.exec(
            delete(TagResource).where(
                col(TagResource.tag_id) == tag_id,
                col(TagResource.resource_type) == resource_type.value,
                col(TagResource.resource_id) != resource_id,
                col(TagResource.resource_id).in_(in_scope),
            )
        )

    async def other_types(
        self, tag_id: uuid.UUID, allowed: set[TaggableResourceTypes]
    ) -> list[str]:
        """The types of the resources ``tag_id`` is on, besides ``allowed``."""
        query = (
            sa_select(col(TagResource.resource_type))
            .where(
                col(TagResource.tag_id) == tag_id,
                col(TagResource.resource_type).not_in([t.value for t in allowed]),
            )
            .distinct()
            .order_by(col(TagResource.resource_type))
        )
        return list((await self.session.exec(query)).scalars().all())  # type: ignore[call-overload]

    async def insert_links(self, rows: list[dict[str, Any]]) -> None:
        """Links, but those already there."""
        await self.session.exec(_insert_new(TagResource).values(rows))

    async def insert_new_tags(self, rows: list[dict[str, Any]]) -> None:
        """Tags, but those whose name is taken (made by a concurrent request)."""
        await self.session.exec(_insert_new(Tag).values(rows))

    async def tags_by_id(self, tag_ids: Collection[uuid.UUID]) -> list[Tag]:
        return list((await self.session.exec(select(Tag).where(col(Tag.id).in_(tag_ids)))).all())

    async def tags_named(self, names: list[str], ids: list[uuid.UUID]) -> list[Tag]:
        """The tags named one of ``names`` or whose id is one of ``ids``."""
        query = select(Tag).where(col(Tag.name).in_(names) | col(Tag.id).in_(ids))
        return list((await self.session.exec(query)).all())

    async def links_of_tags(self, tag_ids: Collection[uuid.UUID]) -> list[TagResource]:
        query = select(TagResource).where(col(TagResource.tag_id).in_(tag_ids))
        return list((await self.session.exec(query)).all())

    async def delete_link(
        self, tag_id: uuid.UUID, resource_type: str, resource_id: uuid.UUID
    ) -> None:
        await self.session.exec(
            delete(TagResource).where(
                col(TagResource.tag_id) == tag_id,
                col(TagResource.resource_type) == resource_type,
                col(TagResource.resource_id) == resource_id,
            )
        )

    async def delete_links_named(
        self, resource_type: str, resource_id: uuid.UUID, names: list[str], ids: list[uuid.UUID]
    ) -> None:
        """Take the tags named one of ``names`` or whose id is one of ``ids`` off a resource."""
        tag_ids = sa_select(col(Tag.id)).where(col(Tag.name).in_(names) | col(Tag.id).in_(ids))
        await self.session.exec(
            delete(TagResource).where(
                col(TagResource.resource_type) == resource_type,
                col(TagResource.resource_id) == resource_id,
                col(TagResource.tag_id).in_(tag_ids),
            )
        )

    async def delete_all_links(self, resource_type: str, resource_ids: list[uuid.UUID]) -> None:
        await self.session.exec(
            delete(TagResource).where(
                col(TagResource.resource_type) == resource_type,
                col(TagResource.resource_id).in_(resource_ids),
            )
        )

    async def tags_of_resources(self, resource_type: str, ids: list[uuid.UUID]) -> list[Any]:
        """The tags (their columns) on each of ``ids`` with its ``resource_id``, by name."""
        params = {"resource_type": resource_type, "ids": ids}
        return list((await core_execute(self.session, _TAGS_OF_RESOURCES, params)).all())

    async def tag_rows(self, tag_ids: Collection[uuid.UUID]) -> list[Any]:
        """The tags of ``tag_ids`` (their columns, to render)."""
        return list(await core_execute(self.session, _TAGS_BY_ID, {"ids": list(tag_ids)}))


def _insert_new(table: Any) -> Any:
    """An INSERT that skips rows already there (tags made by a concurrent request)."""
    return postgresql_insert(table).on_conflict_do_nothing()


def tag_ids_column(resource_type: str, id_column: Any) -> Any:
    """A column of the ids of the row's tags, as one comma-separated text (or NULL), for
    :meth:`TagService.for_rows`: a page's tag links come with its rows, not as rows."""
    tag_id = cast(col(TagResource.tag_id), String)
    return (
        sa_select(func.aggregate_strings(tag_id, ","))
        .where(_links(resource_type, id_column))
        .scalar_subquery()
        .label("tag_ids")
    )


# Built once, run with new values (no statement building per request).
_TAGS_OF_RESOURCES = (
    sa_select(col(TagResource.resource_id).label("resource_id"), *_TAG_TABLE.columns)
    .join(Tag, col(Tag.id) == col(TagResource.tag_id))
    .where(
        col(TagResource.resource_type) == bindparam("resource_type"),
        col(TagResource.resource_id).in_(bindparam("ids", expanding=True)),
    )
    .order_by(col(Tag.name))
)
_TAGS_BY_ID = sa_select(*_TAG_TABLE.columns).where(
    col(Tag.id).in_(bindparam("ids", expanding=True))
)


def _links(resource_type: str, id_column: Any) -> ColumnElement[bool]:
    links: ColumnElement[bool] = and_(
        col(TagResource.resource_type) == resource_type,
        col(TagResource.resource_id) == id_column,
    )
    return links


def tags_field(resource_type: str, id_column: Any) -> Field:
    """The ``tags`` filter: a condition on tag names, true when any tag matches;
    ``isnull:`` means untagged and ``isnotnull:`` tagged."""

    def build(cond: Condition) -> ColumnElement[bool]:
        links = _links(resource_type, id_column)
        any_tag = exists().where(links)
        if cond.op is Op.IS_NULL:
            return not_(any_tag)
        if cond.op is Op.IS_NOT_NULL:
            return any_tag
        matching = (
            exists()
            .where(links)
            .where(col(Tag.id) == col(TagResource.tag_id))
            .where(condition_sql(col(Tag.name), Kind.STRING, cond))
        )
        return matching

    return Field(name="tags", kind=Kind.STRING, build=build, description="Filter by tag name")


def tags_sort(resource_type: str, id_column: Any) -> SortKey:
    """Sort by the alphabetically first tag; untagged rows sort as an empty name (first
    ascending) on both databases, which order NULLs differently."""
    first = (
        sa_select(func.min(Tag.name))
        .join(TagResource, col(Tag.id) == col(TagResource.tag_id))
        .where(_links(resource_type, id_column))
        .scalar_subquery()
    )
    return SortKey("tags", func.coalesce(first, ""))
