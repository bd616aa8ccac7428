"""List declarations tracking's resources share: the fields and sort keys of named,
project-scoped tables, a page's scope and filters across link tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table, bindparam
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col, select

from shared.listing import Condition, Field, Kind, SortKey, base_fields, column_field
from shared.users import user_field
from tracking.core.rows import ScopedRow


def scoped_fields(model: type[ScopedRow]) -> list[Field]:
    """``id``, ``created``, ``updated``, ``name`` and ``user`` (the creator: name, full
    name or id, looked up in identity)."""
    return [
        *base_fields(col(model.id), col(model.created), col(model.updated)),
        column_field("name", col(model.name), Kind.STRING),
        user_field(col(model.user_id)),
    ]


def scoped_sort_keys(model: type[ScopedRow]) -> list[SortKey]:
    """``user`` sorts by the creator's id: the reference sorts by user name, which lives
    in identity's database."""
    return [
        SortKey("created", col(model.created)),
        SortKey("updated", col(model.updated)),
        SortKey("id", col(model.id)),
        SortKey("name", col(model.name)),
        SortKey("user", col(model.user_id)),
    ]


def page_scope(table: Table, by_user: bool) -> tuple[ColumnElement[bool], ...]:
    """A page's scope in ``table``: its project and, ``by_user``, its creator, as the
    ``scope_project`` and ``scope_user`` parameters (to build once: see ``fetch_page``)."""
    project = table.c.project_id == bindparam("scope_project", type_=table.c.project_id.type)
    user = table.c.user_id == bindparam("scope_user", type_=table.c.user_id.type)
    return (project, user) if by_user else (project,)


def linked_field(
    name: str, owner_id: Any, link_owner: Any, inner: Field, description: str
) -> Field:
    """A filter across a link table: a row matches when one of its links (whose
    ``link_owner`` column points back at ``owner_id``) satisfies ``inner``."""

    def build(cond: Condition) -> ColumnElement[bool]:
        matching = select(link_owner).where(inner.sql(cond))
        return owner_id.in_(matching)  # type: ignore[no-any-return]

    return Field(name=name, kind=inner.kind, build=build, description=description)


def scope_conditions(pairs: Sequence[tuple[Any, object | None]]) -> list[ColumnElement[bool]]:
    """``column == value`` for each value given (``scope_user``, ``scope_type`` …): the
    engine ANDs them on whatever ``logical_operator`` joins the filters with."""
    return [column == value for column, value in pairs if value is not None]
