"""``/api/v1/info``: what the client reads before choosing a login flow; ``/health/live``,
which ``kitaru doctor`` probes beside ``/health``."""

from __future__ import annotations

import uuid

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from agent_accounts.settings import Settings
from shared.responses import render
from shared.routing import ApiRoute, api_route

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
    settings: Settings = request.state.settings
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


def routes() -> list[ApiRoute]:
    return [
        api_route("/api/v1/info", info, method="GET", summary="Server information",
                  tags=["server"], response=ServerInfoResponse, auth=False),
        api_route("/health/live", live, method="GET", summary="Liveness", tags=["health"],
                  response=LivenessResponse, auth=False),
    ]  # fmt: skip
