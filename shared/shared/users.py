"""Users as other services show them: the body-only ``UserResponse`` in ``resources.user``.

Services never read identity's database. A :class:`UserDirectory` asks identity's
``GET /api/v1/users?id=oneof:[…]`` with the service's client-credentials token, in one
call for all the ids it does not have, and keeps the answers in a small in-process cache::

    directory = create_user_directory(settings, state["http"])   # in the lifespan
    users = await directory.get_many({a.user_id for a in artifacts if a.user_id})
    user = users.get(artifact.user_id)                           # None → "user": null

Every service that shows creators reads them with :func:`users_by_id` (the request's
directory, ``state.users``) and filters on them with :func:`user_field`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import httpx
from pydantic import BaseModel, ConfigDict
from starlette.requests import HTTPConnection

from shared.errors import ServiceUnavailable
from shared.http import service_auth
from shared.listing import Condition, Field, Kind, Op
from shared.settings import ServiceSettings
from shared.types import WireDatetime

__all__ = [
    "NestedUser",
    "UserResponse",
    "UserResponseBody",
    "create_user_directory",
    "user_field",
    "users_by_id",
]

logger = logging.getLogger(__name__)

BATCH_SIZE = 100
"""Ids per call to identity: the query string stays under a gateway's 8 KiB request line."""


class UserResponseBody(BaseModel):
    """The body of the reference's ``UserResponse``."""

    model_config = ConfigDict(frozen=True)  # cached and rendered by many responses

    created: WireDatetime
    updated: WireDatetime
    active: bool = False
    activation_token: str | None = None
    full_name: str = ""
    email_opted_in: bool | None = None
    is_service_account: bool
    is_admin: bool
    default_project_id: UUID | None = None
    avatar_url: str | None = None


class UserResponse(BaseModel):
    """A ``UserResponse`` nested in another entity: body only, ``metadata`` and
    ``resources`` are ``null``. Fields are in the reference's envelope order. Frozen,
    all the way down: the directory's cached users are shared by every response, which
    may keep their JSON form (:func:`shared.responses.dumps`)."""

    model_config = ConfigDict(frozen=True)

    body: UserResponseBody
    metadata: None = None
    resources: None = None
    id: UUID
    permission_denied: bool = False
    name: str


class _IdentityUser(BaseModel):
    """One item of identity's user page; whatever else it carries is dropped."""

    id: UUID
    name: str
    body: UserResponseBody


class _IdentityPage(BaseModel):
    items: list[_IdentityUser]
    total_pages: int = 1


@dataclass(frozen=True)
class _Entry:
    expires_at: float
    user: UserResponse | None
    """``None``: identity does not know this id (a deleted user)."""


_Fetched = dict[UUID, UserResponse | None]
"""What one fetch learnt: an entry for every id whose lookup succeeded."""


FIND_PAGE_SIZE = 1000


class UserDirectory:
    """Nested users by id, from identity, cached in process.

    - :meth:`get_many` makes one call for all ids it has no fresh entry for (in batches of
      :data:`BATCH_SIZE`); callers asking at the same time for ids already being fetched
      wait for that call instead of making their own.
    - Entries live ``ttl`` seconds, unknown ids included (so a deleted creator does not
      cost a call per listing); at most ``max_entries`` are kept, least recently used
      dropped first.
    - When identity cannot be reached or answers badly, a warning is logged and the ids
      are answered from the cache, expired entries included: a listing shows a slightly
      stale user rather than failing.
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        identity_url: str,
        auth: httpx.Auth,
        ttl: float = 60.0,
        max_entries: int = 10000,
    ) -> None:
        self._http = http
        self._users_url = identity_url.rstrip("/") + "/api/v1/users"
        self._auth = auth
        self._ttl = ttl
        self._max_entries = max_entries
        self._cache: OrderedDict[UUID, _Entry] = OrderedDict()
        self._inflight: dict[UUID, asyncio.Task[_Fetched]] = {}

    async def get_many(self, ids: Collection[UUID]) -> dict[UUID, UserResponse]:
        """The users behind ``ids``; ids identity does not know are left out.

        Never raises because identity is down or misbehaves.
        """
        now = time.monotonic()
        found: dict[UUID, UserResponse] = {}
        waiting: dict[UUID, asyncio.Task[_Fetched]] = {}
        missing: list[UUID] = []
        for user_id in set(ids):
            entry = self._cache.get(user_id)
            if entry is not None and entry.expires_at > now:
                self._cache.move_to_end(user_id)
                if entry.user is not None:
                    found[user_id] = entry.user
            elif user_id in self._inflight:
                waiting[user_id] = self._inflight[user_id]
            else:
                missing.append(user_id)
        if missing:
            task = asyncio.create_task(self._fetch(missing))
            for user_id in missing:
                self._inflight[user_id] = task
                waiting[user_id] = task
            task.add_done_callback(lambda done: self._forget(missing, done))
        for task in set(waiting.values()):
            # Shielded: a caller that goes away does not cancel the others' lookup.
            await asyncio.shield(task)
        for user_id, task in waiting.items():
            fetched = task.result()
            if user_id in fetched:
                user = fetched[user_id]
            else:  # the lookup failed: serve what we had, however old
                stale = self._cache.get(user_id)
                user = stale.user if stale is not None else None
            if user is not None:
                found[user_id] = user
        return found

    def _forget(self, ids: Sequence[UUID], task: asyncio.Task[_Fetched]) -> None:
        for user_id in ids:
            if self._inflight.get(user_id) is task:
                del self._inflight[user_id]

    async def _fetch(self, ids: Sequence[UUID]) -> _Fetched:
        fetched: _Fetched = {}
        for start in range(0, len(ids), BATCH_SIZE):
            batch = ids[start : start + BATCH_SIZE]
            try:
                users = await self._call(batch)
            except Exception as exc:  # any failure degrades to the cache, never to the caller
                logger.warning(
                    "could not look users up in identity; serving cached users",
                    extra={"error": repr(exc), "ids": len(batch)},
                )
                continue
            expires_at = time.monotonic() + self._ttl
            for user_id in batch:
                fetched[user_id] = users.get(user_id)
                self._remember(user_id, _Entry(expires_at, fetched[user_id]))
        return fetched

    async def _call(self, ids: Sequence[UUID]) -> dict[UUID, UserResponse]:
        oneof = json.dumps([str(i) for i in ids], separators=(",", ":"))
        response = await self._http.get(
            self._users_url,
            params={"id": f"oneof:{oneof}", "size": len(ids), "hydrate": "false"},
            auth=self._auth,
        )
        if response.status_code != 200:
            raise RuntimeError(f"identity answered {response.status_code}")
        page = _IdentityPage.model_validate_json(response.content)
        return {
            item.id: UserResponse(
                id=item.id,
                name=item.name,
                # A one-time activation token never leaves identity inside another entity.
                body=item.body.model_copy(update={"activation_token": None}),
            )
            for item in page.items
        }

    async def find_ids(self, expression: str) -> set[UUID]:
        """The ids of the users whose name or full name matches a filter ``expression``
        (the reference's syntax, e.g. ``startswith:al``): how a service filters its own
        rows by a creator's name. Unlike :meth:`get_many` it fails (503) when identity
        cannot answer, since a silently empty match would be a wrong answer."""
        found: set[UUID] = set()
        page = 1
        while True:
            try:
                response = await self._http.get(
                    self._users_url,
                    params={
                        "name": expression,
                        "full_name": expression,
                        "logical_operator": "or",
                        "size": FIND_PAGE_SIZE,
                        "page": page,
                    },
                    auth=self._auth,
                )
            except httpx.HTTPError as exc:
                raise ServiceUnavailable("Users cannot be looked up right now.") from exc
            if response.status_code != 200:
                raise ServiceUnavailable("Users cannot be looked up right now.")
            result = _IdentityPage.model_validate_json(response.content)
            found.update(item.id for item in result.items)
            if page >= result.total_pages:
                return found
            page += 1

    def _remember(self, user_id: UUID, entry: _Entry) -> None:
        self._cache[user_id] = entry
        self._cache.move_to_end(user_id)
        while len(self._cache) > self._max_entries:
            self._cache.popitem(last=False)


def create_user_directory(
    settings: ServiceSettings, http: httpx.AsyncClient
) -> UserDirectory | None:
    """A directory that authenticates with the service's client credentials against
    ``settings.identity_url``; ``None`` when the service has none configured."""
    auth = service_auth(settings, http)
    if auth is None:
        return None
    return UserDirectory(http, identity_url=settings.identity_url.rstrip("/"), auth=auth)


# The nested user under its purpose's name, for readers of other services' code.
NestedUser = UserResponse


async def users_by_id(
    connection: HTTPConnection, ids: Iterable[UUID | None]
) -> dict[UUID, NestedUser]:
    """The nested users for ``ids`` from the request's directory (missing ones are left
    out: rendered as null)."""
    directory: UserDirectory | None = connection.state.users
    wanted = {i for i in ids if i is not None}
    if directory is None or not wanted:
        return {}
    return await directory.get_many(wanted)


async def _find_users(connection: HTTPConnection, cond: Condition) -> set[UUID]:
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
