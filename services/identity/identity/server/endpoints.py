"""``/info`` (the server model the zenml client reads first), ``/version``, ``/load-info``
(this process's threads and database pool) and the public JWKS."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from identity.server.schemas import AuthScheme, ServerLoadInfo, ServerModel
from identity.server.service import load_info
from identity.server_settings.service import ServerSettingsService
from identity.settings import Settings
from identity.state import IdentityState
from shared.auth import require_principal
from shared.db import transaction
from shared.responses import render
from shared.routing import ApiRoute, api_route
from shared.settings import PLATFORM_VERSION


class JWKS(BaseModel):
    keys: list[dict[str, Any]]


async def info(request: Request) -> Response:
    state = IdentityState.of(request)
    settings: Settings = state.settings
    async with transaction(request) as session:
        current = await ServerSettingsService(session, state.clock).get()
    # The name and analytics are the admin's current settings, as the reference's.
    return render(
        ServerModel(
            id=settings.server_id,
            name=current.server_name,
            version=PLATFORM_VERSION,
            auth_scheme=AuthScheme.OAUTH2_PASSWORD_BEARER,
            server_url=settings.server_url,
            dashboard_url=settings.dashboard_url,
            analytics_enabled=current.enable_analytics,
            last_user_activity=current.last_user_activity,
        )
    )


async def version(_request: Request) -> Response:
    return render(PLATFORM_VERSION)


async def get_load_info(request: Request) -> Response:
    require_principal(request)
    return render(load_info(IdentityState.of(request).engine))


async def jwks(request: Request) -> Response:
    # Public keys only; cached briefly by clients, who refetch on an unknown kid anyway.
    document = await IdentityState.of(request).keyring.jwks()
    return JSONResponse(document, headers={"Cache-Control": "public, max-age=60"})


def routes() -> list[ApiRoute]:
    return [
        api_route(
            "/api/v1/info",
            info,
            method="GET",
            summary="Server Info",
            tags=["server"],
            auth=False,
            response=ServerModel,
        ),
        api_route(
            "/api/v1/version",
            version,
            method="GET",
            summary="Version",
            tags=["server"],
            auth=False,
            response=str,
        ),
        api_route(
            "/api/v1/load-info",
            get_load_info,
            method="GET",
            summary="Server Load Info",
            tags=["server"],
            response=ServerLoadInfo,
        ),
        api_route(
            "/.well-known/jwks.json",
            jwks,
            method="GET",
            summary="Signing keys (JWKS)",
            tags=["server"],
            auth=False,
            response=JWKS,
        ),
    ]
