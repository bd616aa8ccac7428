"""``/settings`` (any user reads them, an admin changes them), ``/onboarding_state`` and
``/activate`` (refused: this server is active from its first start)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from identity.server_settings.schemas import (
    ServerActivationRequest,
    ServerSettingsQuery,
    ServerSettingsResponse,
    ServerSettingsUpdate,
    settings_response,
)
from identity.server_settings.service import ServerSettingsService, onboarding_state
from identity.settings import Settings
from identity.state import IdentityState
from shared.auth import require_principal
from shared.db import transaction
from shared.responses import render, render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query


async def get(request: Request) -> Response:
    state = IdentityState.of(request)
    query = parse_query(request, ServerSettingsQuery)
    caller = require_principal(request)
    settings: Settings = state.settings
    async with transaction(request) as session:
        row = await ServerSettingsService(session, state.clock).get_for(caller)
    return render(settings_response(row, settings.server_id, hydrate=query.hydrate))


async def update(request: Request) -> Response:
    state = IdentityState.of(request)
    body = await parse_json(request, ServerSettingsUpdate)
    caller = require_principal(request)
    settings: Settings = state.settings
    async with transaction(request) as session:
        row = await ServerSettingsService(session, state.clock).update_for(caller, body)
    return render(settings_response(row, settings.server_id, hydrate=True))


async def activate(request: Request) -> Response:
    state = IdentityState.of(request)
    body = await parse_json(request, ServerActivationRequest)
    async with transaction(request) as session:
        await ServerSettingsService(session, state.clock).activate(body)
    return render_null()


async def get_onboarding_state(request: Request) -> Response:
    state = IdentityState.of(request)
    caller = require_principal(request)
    async with transaction(request) as session:
        await ServerSettingsService(session, state.clock).check_reader(caller)
    steps = await onboarding_state(
        state.sessionmaker,
        state.onboarding,
        state.clock,
    )
    return render(steps)


def routes() -> list[ApiRoute]:
    tags = ["server"]
    return [
        api_route(
            "/api/v1/settings",
            get,
            method="GET",
            summary="Get Settings",
            tags=tags,
            query=ServerSettingsQuery,
            response=ServerSettingsResponse,
        ),
        api_route(
            "/api/v1/settings",
            update,
            method="PUT",
            summary="Update Server Settings",
            tags=tags,
            body=ServerSettingsUpdate,
            response=ServerSettingsResponse,
            errors=(403,),
        ),
        api_route(
            "/api/v1/activate",
            activate,
            method="PUT",
            summary="Activate Server",
            tags=tags,
            auth=False,
            body=ServerActivationRequest,
            response=None,
            errors=(403,),
        ),
        api_route(
            "/api/v1/onboarding_state",
            get_onboarding_state,
            method="GET",
            summary="Get Onboarding State",
            tags=tags,
            response=list[str],
        ),
    ]
