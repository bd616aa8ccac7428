"""``/device_authorization`` and ``/devices``: start a device authorization, approve it,
and manage the caller's authorized devices."""

from __future__ import annotations

import uuid
from urllib.parse import urlencode

from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from agent_accounts.core.auth import require_account
from agent_accounts.core.listing import Page
from agent_accounts.device.repository import DEVICES
from agent_accounts.device.schemas import (
    DeviceAuthorizationForm,
    DeviceAuthorizationResponse,
    DeviceGetQuery,
    DeviceResponse,
    DeviceUpdateRequest,
    DeviceVerifyRequest,
    device_response,
)
from agent_accounts.device.service import DeviceService
from agent_accounts.settings import Settings
from agent_accounts.state import AgentState
from shared.db import transaction
from shared.errors import PlatformError
from shared.responses import NO_STORE, render
from shared.routing import ApiRoute, api_route, parse_form, parse_json, parse_query, path_param

TAGS = ["devices"]

LIST_QUERY = DEVICES.query_model("DeviceListQuery")


def devices(request: Request, session: AsyncSession) -> DeviceService:
    state = AgentState.of(request)
    return DeviceService(session, state.settings, state.clock)


def _id(request: Request) -> uuid.UUID:
    return path_param(request, "device_id", uuid.UUID)


def verification_uri(request: Request, settings: Settings) -> str:
    """The approval page: ``<dashboard URL or this server>/devices/verify``."""
    base = settings.dashboard_url or str(request.base_url)
    return f"{base.rstrip('/')}/devices/verify"


async def device_authorization(request: Request) -> Response:
    """No login: a device asks to be authorized and gets its codes, once."""
    form = await parse_form(request, DeviceAuthorizationForm)
    client = request.client.host if request.client else None
    async with transaction(request) as session:
        service = devices(request, session)
        device, user_code, device_code = await service.authorize(form, client)
    uri = verification_uri(request, AgentState.of(request).settings)
    query = urlencode({"device_id": str(device.id), "user_code": user_code})
    response = DeviceAuthorizationResponse(
        device_id=device.id,
        device_code=device_code,
        user_code=user_code,
        verification_uri=uri,
        verification_uri_complete=f"{uri}?{query}",
        expires_in=service.timeout,
        interval=service.interval,
    )
    return render(response, headers=NO_STORE)


async def verify(request: Request) -> Response:
    caller = require_account(request)
    device_id = _id(request)
    body = await parse_json(request, DeviceVerifyRequest)
    async with transaction(request) as session:
        outcome = await devices(request, session).verify(
            device_id, body.user_code, body.trusted, caller
        )
    # Raised after the commit: a wrong user code stays counted.
    if isinstance(outcome, PlatformError):
        raise outcome
    return render(device_response(outcome))


async def list_devices(request: Request) -> Response:
    caller = require_account(request)
    query = parse_query(request, LIST_QUERY)
    async with transaction(request) as session:
        items, cursor = await devices(request, session).list(caller, query)
    return render(Page(items=[device_response(d) for d in items], next_cursor=cursor))


async def get(request: Request) -> Response:
    caller = require_account(request)
    device_id = _id(request)
    options = parse_query(request, DeviceGetQuery)
    async with transaction(request) as session:
        device = await devices(request, session).get(device_id, caller, options.user_code)
    return render(device_response(device))


async def update(request: Request) -> Response:
    caller = require_account(request)
    device_id = _id(request)
    body = await parse_json(request, DeviceUpdateRequest)
    async with transaction(request) as session:
        device = await devices(request, session).update(
            device_id, caller, locked=body.locked, trusted=body.trusted
        )
    return render(device_response(device))


async def delete(request: Request) -> Response:
    caller = require_account(request)
    device_id = _id(request)
    async with transaction(request) as session:
        await devices(request, session).delete(device_id, caller)
    return Response(status_code=204)


def routes() -> list[ApiRoute]:
    return [
        api_route("/api/v1/device_authorization", device_authorization, method="POST",
                  summary="Start a device authorization", tags=TAGS,
                  form=DeviceAuthorizationForm, response=DeviceAuthorizationResponse,
                  auth=False, errors=(400,)),
        api_route("/api/v1/devices", list_devices, method="GET", summary="List your devices",
                  tags=TAGS, query=LIST_QUERY, response=Page[DeviceResponse]),
        api_route("/api/v1/devices/{device_id:uuid_param}", get, method="GET",
                  summary="Get a device",
                  tags=TAGS, query=DeviceGetQuery, response=DeviceResponse, errors=(404,)),
        api_route("/api/v1/devices/{device_id:uuid_param}", update, method="PATCH",
                  summary="Lock, unlock, trust or distrust a device", tags=TAGS,
                  body=DeviceUpdateRequest, response=DeviceResponse, errors=(404,)),
        api_route("/api/v1/devices/{device_id:uuid_param}", delete, method="DELETE",
                  summary="Delete a device", tags=TAGS, status_code=204, errors=(404,)),
        api_route("/api/v1/devices/{device_id:uuid_param}/verify", verify, method="POST",
                  summary="Approve a device with its user code", tags=TAGS,
                  body=DeviceVerifyRequest, response=DeviceResponse, errors=(404, 422)),
    ]  # fmt: skip
