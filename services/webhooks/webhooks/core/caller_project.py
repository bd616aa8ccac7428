"""The project a request names, resolved with the caller's own credentials (see
:mod:`webhooks.core.projects`); apart from it because it reads the service's state, which
names the project directory."""

from __future__ import annotations

import uuid

from starlette.requests import HTTPConnection

from webhooks.core.projects import Project, credentials_of
from webhooks.state import WebhooksState

__all__ = ["resolve_project"]


async def resolve_project(
    connection: HTTPConnection, name_or_id: str | uuid.UUID | None
) -> Project:
    directory = WebhooksState.of(connection).projects
    return await directory.resolve(name_or_id, credentials_of(connection))
