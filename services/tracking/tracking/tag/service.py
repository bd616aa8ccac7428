"""Tags on resources: attach, detach, read in bulk, and filter and sort by them."""

from __future__ import annotations

import hashlib
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import String, Table, and_, bindparam, cast, delete, exists, func, not_
from sqlalchemy import select as sa_select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute, utcnow
from shared.listing import Condition, Field, Kind, Op, SortKey
from shared.listing.sql import condition_sql
from tracking.models import Tag, TagResource
from tracking.tag.schemas import ColorVariants, TagRow

_COLORS = list(ColorVariants)


def tag_color(name: str) -> ColorVariants:
    """A tag's colour follows from its name (the reference picks one at random: a defect),
    so the same tag looks the same everywhere and every time."""
    digest = hashlib.sha256(name.encode()).digest()
    return _COLORS[digest[0] % len(_COLORS)]


def _insert_new(table: Any) -> Any:
    """An INSERT that skips rows already there (tags made by a concurrent request)."""
    return postgresql_insert(table).on_conflict_do_nothing()


class TagService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def attach(
        self,
        resource_type: str,
        resource_id: uuid.UUID,
        names: Iterable[str],
        user_id: uuid.UUID | None,
    ) -> list[Tag]:
        """Tag a resource, creating the tags that do not exist yet; returns its new tags.

        Safe under concurrency: two requests introducing the same tag both succeed.
        """
        wanted = list(dict.fromkeys(n for n in names if n))
        if not wanted:
            return []
        now = utcnow()
        await self.session.exec(
            _insert_new(Tag).values(
                [
                    {
                        "id": uuid.uuid4(),
                        "name": name,
                        "color": tag_color(name),
                        "exclusive": False,
                        "user_id": user_id,
                        "created": now,
                        "updated": now,
                    }
                    for name in wanted
                ]
            )
        )
        tags = list((await self.session.exec(select(Tag).where(col(Tag.name).in_(wanted)))).all())
        await self.session.exec(
            _insert_new(TagResource).values(
                [
                    {
                        "tag_id": tag.id,
                        "resource_id": resource_id,
                        "resource_type": resource_type,
                        "created": now,
                    }
                    for tag in tags
                ]
            )
        )
        return sorted(tags, key=lambda tag: tag.name)

    async def detach(
        self, resource_type: str, resource_id: uuid.UUID, names: Iterable[str]
    ) -> None:
        names = list(names)
        if not names:
            return
        tag_ids = sa_select(col(Tag.id)).where(col(Tag.name).in_(names))
        await self.session.exec(
            delete(TagResource).where(
                col(TagResource.resource_type) == resource_type,
                col(TagResource.resource_id) == resource_id,
                col(TagResource.tag_id).in_(tag_ids),
            )
        )
        await self.session.flush()

    async def detach_all(self, resource_type: str, resource_ids: Iterable[uuid.UUID]) -> None:
        await self.session.exec(
            delete(TagResource).where(
                col(TagResource.resource_type) == resource_type,
                col(TagResource.resource_id).in_(list(resource_ids)),
            )
        )

    async def for_resources(
        self, resource_type: str, resource_ids: Iterable[uuid.UUID]
    ) -> dict[uuid.UUID, list[TagRow]]:
        """Each resource's tags (their columns, to render), sorted by name."""
        ids = list(resource_ids)
        found: dict[uuid.UUID, list[TagRow]] = defaultdict(list)
        if not ids:
            return found
        params = {"resource_type": resource_type, "ids": ids}
        for row in (await core_execute(self.session, _TAGS_OF_RESOURCES, params)).all():
            found[row.resource_id].append(row)
        return found

    async def for_rows(self, rows: Sequence[Any]) -> list[list[TagRow]]:
        """Each row's tags, sorted by name, from its :func:`tag_ids_column`: one query for
        the distinct tags of the whole page (a few rows, whatever the page's size)."""
        listed = [row.tag_ids.split(",") if row.tag_ids else [] for row in rows]
        keys = {key: uuid.UUID(key) for key in {key for ids in listed for key in ids}}
        if not keys:
            return [[] for _ in rows]
        params = {"ids": list(set(keys.values()))}
        tags = {row.id: row for row in await core_execute(self.session, _TAGS_BY_ID, params)}
        return [
            sorted((tags[keys[key]] for key in ids if keys[key] in tags), key=_tag_name)
            for ids in listed
        ]


def _tag_name(tag: TagRow) -> str:
    return tag.name


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


_TAG_TABLE: Table = Tag.__table__  # type: ignore[attr-defined]
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
