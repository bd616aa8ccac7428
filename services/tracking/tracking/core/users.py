"""The creators' users for ``resources.user``, from identity through the user directory
(an HTTP call with a cache; see shared.users), never from identity's database."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from starlette.requests import HTTPConnection

from shared.listing import Condition, Field, Kind, Op
from shared.users import NestedUser, UserDirectory


async def users_by_id(
    connection: HTTPConnection, ids: Iterable[uuid.UUID | None]
) -> dict[uuid.UUID, NestedUser]:
    """The nested users for ``ids`` (missing ones are left out: rendered as null)."""
    directory: UserDirectory | None = connection.state.users
    wanted = {i for i in ids if i is not None}
    if directory is None or not wanted:
        return {}
    return await directory.get_many(wanted)


async def _find_users(connection: HTTPConnection, cond: Condition) -> set[uuid.UUID]:
    directory: UserDirectory | None = connection.state.users
    if directory is None or cond.op in (Op.IS_NULL, Op.IS_NOT_NULL):
        return set()
    return await directory.find_ids(cond.raw)


def user_field(column: Any) -> Field:
    """The ``user`` filter (name or id): the operator applies to the creator's id here and
    to users' names and full names in identity, joined by OR."""
    return Field(
        name="user",
        kind=Kind.STRING,
        column=column,
        lookup=_find_users,
        description="The creator: user name, full name or id (filter syntax)",
    )
