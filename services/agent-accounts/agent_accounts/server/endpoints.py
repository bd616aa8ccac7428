"""``/api/v1/info``: what the client reads before choosing a login flow; ``/health/live``,
which ``kitaru doctor`` probes beside ``/health``; and the 501 of kitaru's routes inside
the families this server serves that it does not serve itself (the gateway answers the
same for the families it does not route here at all)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from agent_accounts.core.errors import NotServed
from agent_accounts.settings import Settings
from agent_accounts.state import AgentState
from shared.responses import render
from shared.routing import api_route

# The agent-run server we are wire-compatible with (kitaru); the CLI compares the major.
AGENT_SERVER_VERSION = "0.27.2"


class ServerInfoResponse(BaseModel):
    id: uuid.UUID | None
    version: str
    ui_version: str | None
    auth_scheme: str
    server_url: str | None
    dashboard_url: str | None
    control_plane_api_url: str | None
    analytics_enabled: bool
    max_blob_size_bytes: int


async def info(request: Request) -> Response:
    settings: Settings = AgentState.of(request).settings
    return render(
        ServerInfoResponse(
            id=settings.server_id,
            version=AGENT_SERVER_VERSION,
            ui_version=None,
            auth_scheme=settings.server_auth_scheme,
            server_url=settings.server_url or str(request.base_url).rstrip("/"),
            dashboard_url=settings.dashboard_url or None,
            control_plane_api_url=None,
            analytics_enabled=False,
            max_blob_size_bytes=settings.max_blob_size_bytes,
        )
    )


class LivenessResponse(BaseModel):
    status: str


async def live(_request: Request) -> Response:
    """The process answers (kitaru's liveness probe; ``/health`` is the readiness one)."""
    return render(LivenessResponse(status="ok"))


# kitaru 0.27.2's routes under /sessions and /tasks that this server does not serve (the
# kitaru UI's session pages call the first three).
NOT_SERVED = [
    ("/api/v1/sessions/{session_id}/nodes", "GET"),
    ("/api/v1/sessions/{session_id}/nodes", "POST"),
    ("/api/v1/sessions/{session_id}/evaluations", "POST"),
    ("/api/v1/sessions/{session_id}/full", "GET"),
    ("/api/v1/tasks/{task_id}/spec", "GET"),
]


def _not_served(route: str) -> Callable[[Request], Awaitable[Response]]:
    async def not_served(_request: Request) -> Response:
        raise NotServed(route)

    return not_served


def routes() -> list[BaseRoute]:
    # Plain routes: not part of this server's API, so not in its OpenAPI document.
    unserved = [Route(path, _not_served(path), methods=[method]) for path, method in NOT_SERVED]
    return [
        *unserved,
        api_route("/api/v1/info", info, method="GET", summary="Server information",
                  tags=["server"], response=ServerInfoResponse, auth=False),
        api_route("/health/live", live, method="GET", summary="Liveness", tags=["health"],
                  response=LivenessResponse, auth=False),
    ]  # fmt: skip
