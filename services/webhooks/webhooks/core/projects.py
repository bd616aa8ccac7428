"""Projects live in the tracking service: a :class:`ProjectDirectory` resolves a project
name or id over HTTP and caches the answer.

Tracking's project routes accept user tokens only, so the caller's own credentials
(bearer header or session cookie) are forwarded: tracking decides what that user may see.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError
from starlette.requests import HTTPConnection

from shared.errors import NotFound, ServiceUnavailable

DEFAULT_PROJECT = "default"
FORWARDED_CREDENTIALS = ("authorization", "cookie")


class Project(BaseModel):
    id: uuid.UUID
    name: str


class ProjectNotFound(NotFound):
    def __init__(self, name_or_id: object) -> None:
        super().__init__(
            f"Unable to get project with name or ID '{name_or_id}': "
            "No project with this name or ID found"
        )


class ProjectDirectory:
    """Name-or-id → project, from tracking, cached ``ttl`` seconds (found ones only: a
    project created a moment ago must resolve at once)."""

    def __init__(
        self, http: httpx.AsyncClient, tracking_url: str, *, ttl: float, max_entries: int = 4096
    ) -> None:
        self._http = http
        self._url = tracking_url.rstrip("/") + "/api/v1/projects/"
        self._ttl = ttl
        self._max_entries = max_entries
        self._cache: OrderedDict[str, tuple[float, Project]] = OrderedDict()

    async def resolve(
        self, name_or_id: str | uuid.UUID | None, credentials: Mapping[str, str]
    ) -> Project:
        """The project (404 when tracking does not know it, 503 when it cannot answer);
        the default project when none is named."""
        wanted = DEFAULT_PROJECT if name_or_id is None else str(name_or_id)
        if wanted.strip(".") == "":
            # "", "." and ".." name no project, and as a path segment they would name
            # tracking's project list (or its parent) instead.
            raise ProjectNotFound(wanted)
        cached = self._cache.get(wanted)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        try:
            response = await self._http.get(
                self._url + quote(wanted, safe=""),
                params={"hydrate": "false"},
                headers=dict(credentials),
            )
        except httpx.HTTPError as exc:
            raise ServiceUnavailable("Projects cannot be looked up right now.") from exc
        if response.status_code == 404:
            raise ProjectNotFound(wanted)
        if response.status_code != 200:
            raise ServiceUnavailable(
                f"Projects cannot be looked up right now (tracking answered "
                f"{response.status_code})."
            )
        try:
            project = Project.model_validate_json(response.content)
        except ValidationError as exc:
            raise ServiceUnavailable("Tracking answered a project lookup badly.") from exc
        expires = time.monotonic() + self._ttl
        for key in (wanted, str(project.id), project.name):
            self._cache[key] = (expires, project)
            self._cache.move_to_end(key)
        while len(self._cache) > self._max_entries:
            self._cache.popitem(last=False)
        return project


def credentials_of(connection: HTTPConnection) -> dict[str, str]:
    """The caller's credentials, to act on its behalf in tracking."""
    return {k: v for k in FORWARDED_CREDENTIALS if (v := connection.headers.get(k))}
