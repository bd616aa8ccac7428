"""List and write helpers every tracking resource uses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import select

from shared.listing import Condition, Field


def linked_field(
    name: str, owner_id: Any, link_owner: Any, inner: Field, description: str
) -> Field:
    """A filter across a link table: a row matches when one of its links (whose
    ``link_owner`` column points back at ``owner_id``) satisfies ``inner``."""

    def build(cond: Condition, dialect: str) -> ColumnElement[bool]:
        matching = select(link_owner).where(inner.sql(cond, dialect))
        return owner_id.in_(matching)  # type: ignore[no-any-return]

    return Field(name=name, kind=inner.kind, build=build, description=description)


def scope_conditions(pairs: Sequence[tuple[Any, object | None]]) -> list[ColumnElement[bool]]:
    """``column == value`` for each value given (``scope_user``, ``scope_type`` …): the
    engine ANDs them on whatever ``logical_operator`` joins the filters with."""
    return [column == value for column, value in pairs if value is not None]
