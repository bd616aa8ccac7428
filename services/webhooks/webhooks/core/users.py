"""Creators as ``resources.user`` and the ``user`` list filter, both answered by identity
through the shared user directory (never identity's database)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from starlette.requests import HTTPConnection

from shared.listing import Condition, Field, Kind, Op
from shared.users import NestedUser, UserDirectory


async def creators(
    connection: HTTPConnection, ids: Iterable[uuid.UUID | None]
) -> dict[uuid.UUID, NestedUser]:
    directory: UserDirectory | None = connection.state.users
    wanted = {i for i in ids if i is not None}
    return await directory.get_many(wanted) if directory is not None and wanted else {}


async def _users_named(connection: HTTPConnection, cond: Condition) -> set[uuid.UUID]:
    directory: UserDirectory | None = connection.state.users
    if directory is None or cond.op in (Op.IS_NULL, Op.IS_NOT_NULL):
        return set()
    return await directory.find_ids(cond.raw)


def creator_filter(column: Any) -> Field:
    """``user``: the creator's id, or a user name or full name matched in identity."""
    return Field(
        name="user",
        kind=Kind.STRING,
        column=column,
        lookup=_users_named,
        description="The creator: user name, full name or id (filter syntax)",
    )
