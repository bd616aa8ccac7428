"""Secret queries and the list declaration.

Reads select every column but ``encrypted_values`` unless the caller needs the values:
a page of secrets carries none (the reference's lists never do), so it reads and decrypts
none.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, Table, bindparam, false, or_
from sqlalchemy import select as sa_select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute, flush_unique
from shared.errors import Conflict
from shared.listing import Kind, Listing, ListSpec, SortKey, base_fields, column_field, fetch_page
from shared.users import user_field
from tracking.core.repository import rendered_columns
from tracking.models import Secret

SECRETS = ListSpec(
    resource="secret",
    id_column=col(Secret.id),
    fields=[
        *base_fields(col(Secret.id), col(Secret.created), col(Secret.updated)),
        column_field("name", col(Secret.name), Kind.STRING),
        user_field(col(Secret.user_id)),
        column_field(
            "private", col(Secret.private), Kind.BOOL, description="Whether the secret is private"
        ),
    ],
    sort_keys=[
        SortKey(name, col(getattr(Secret, name)))
        for name in ("created", "updated", "id", "name", "private")
    ]
    + [SortKey("user", col(Secret.user_id))],
)


def _table() -> Table:
    return Secret.__table__  # type: ignore[attr-defined,no-any-return]


@functools.cache
def _listed() -> Select[Any]:
    """A listed secret's columns: all but its values."""
    table = _table()
    return sa_select(*(c for c in rendered_columns(table) if c.name != "encrypted_values"))


@functools.cache
def _read() -> Select[Any]:
    table = _table()
    return sa_select(*rendered_columns(table)).where(
        table.c.id == bindparam("id", type_=table.c.id.type)
    )


@functools.cache
def _visible() -> tuple[ColumnElement[bool], ...]:
    """What the caller (the ``viewer`` parameter) may see: public secrets and its own
    private ones (built once, so unfiltered pages are prebuilt statements)."""
    table = _table()
    viewer = bindparam("viewer", type_=table.c.user_id.type)
    return (or_(table.c.private == false(), table.c.user_id == viewer),)


class SecretRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, secret_id: uuid.UUID, *, lock: bool = False) -> Secret | None:
        """The ORM instance, to change or delete (``lock``: held until the transaction
        ends, so concurrent updates of its values apply one after another)."""
        return await self.session.get(Secret, secret_id, with_for_update=lock)

    async def read(self, secret_id: uuid.UUID) -> Any | None:
        """The row with its encrypted values, to render (a Core row)."""
        return (await core_execute(self.session, _read(), {"id": secret_id})).first()

    async def page(self, listing: Listing, viewer: uuid.UUID) -> tuple[int, Sequence[Any]]:
        """The page of what ``viewer`` may see, without values (Core rows)."""
        return await fetch_page(
            self.session,
            SECRETS,
            listing,
            _listed(),
            scope=_visible(),
            params={"viewer": viewer},
            core=True,
        )

    async def visible_among(
        self, secret_ids: Sequence[uuid.UUID], viewer: uuid.UUID | None
    ) -> set[uuid.UUID]:
        """Which of ``secret_ids`` exist and ``viewer`` may see (one query)."""
        if not secret_ids:
            return set()
        table = _table()
        statement = sa_select(table.c.id).where(table.c.id.in_(secret_ids), *_visible())
        rows = await core_execute(self.session, statement, {"viewer": viewer})
        return {row.id for row in rows}

    async def visible_named(
        self, ids: Sequence[uuid.UUID], names: Sequence[str], viewer: uuid.UUID | None
    ) -> Sequence[Any]:
        """The secrets ``viewer`` may see among those with these ids or names (one query;
        rows of ``id``, ``name``, ``private``, ``updated``, ``encrypted_values``)."""
        if not ids and not names:
            return []
        table = _table()
        statement = sa_select(
            table.c.id, table.c.name, table.c.private, table.c.updated, table.c.encrypted_values
        ).where(or_(table.c.id.in_(ids), table.c.name.in_(names)), *_visible())
        return (await core_execute(self.session, statement, {"viewer": viewer})).all()

    async def add(self, secret: Secret, clash: Conflict) -> None:
        """Write ``secret``; a unique name index answers ``clash`` (409), so concurrent
        duplicates fail as sequential ones."""
        self.session.add(secret)
        await flush_unique(self.session, clash)

    async def delete(self, secret: Secret) -> None:
        await self.session.delete(secret)
        await self.session.flush()
