"""List and write helpers every tracking resource uses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql import Executable
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.errors import Conflict
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


async def flush_unique(
    session: AsyncSession, conflict: Conflict, statement: Executable | None = None
) -> None:
    """Flush (or run ``statement``), answering ``conflict`` (409) when a unique name is
    taken: the constraint decides, so concurrent duplicates fail the same way as sequential
    ones. (Build the error before: after a failed flush the rows' attributes cannot be
    read.)"""
    try:
        if statement is None:
            await session.flush()
        else:
            await session.exec(statement)  # type: ignore[call-overload]
    except IntegrityError as exc:
        # SQLite: "UNIQUE constraint failed: …"; PostgreSQL: "duplicate key value violates
        # unique constraint …". Any other integrity error is a bug, not a 409.
        if "unique" not in str(exc.orig).lower():
            raise
        raise conflict from None
