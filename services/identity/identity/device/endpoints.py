"""``/device_authorization`` and the caller's ``/devices``."""

from __future__ import annotations

import uuid

from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from identity.device.repository import DEVICES
from identity.device.schemas import (
    DeviceAuthorizationForm,
    DeviceListQuery,
    DeviceQuery,
    OAuthDeviceAuthorizationResponse,
    OAuthDeviceResponse,
    OAuthDeviceUpdate,
    OAuthDeviceVerificationRequest,
    device_response,
)
from identity.device.service import DeviceDetails, DeviceService, Refused
from identity.models import User
from identity.state import IdentityState
from shared.auth import require_principal
from shared.db import transaction
from shared.listing import page_of, parse_list, query_extras
from shared.pagination import Page
from shared.responses import NO_STORE, render, render_null
from shared.routing import ApiRoute, api_route, parse_form, parse_json, parse_query, path_param

LIST_QUERY = DEVICES.query_model(extra=query_extras(DeviceListQuery))


def _service(request: Request, session: AsyncSession) -> DeviceService:
    state = IdentityState.of(request)
    return DeviceService(session, state.settings, state.revocations, state.clock)


async def _owner(request: Request, session: AsyncSession) -> User:
    """The user whose devices the request manages (see :meth:`DeviceService.owner`)."""
    return await _service(request, session).owner(require_principal(request))


async def authorize(request: Request) -> Response:
    form = await parse_form(request, DeviceAuthorizationForm)
    details = DeviceDetails.from_user_agent(
        request.headers.get("user-agent"), request.client.host if request.client else None
    )
    async with transaction(request) as session:
        issued = await _service(request, session).authorize(form.client_id, details)
    return render(
        OAuthDeviceAuthorizationResponse(
            device_code=issued.device_code,
            user_code=issued.user_code,
            verification_uri=issued.verification_uri,
            verification_uri_complete=issued.verification_uri_complete,
            expires_in=issued.expires_in,
            interval=issued.interval,
        ),
        headers=NO_STORE,
    )


async def list_devices(request: Request) -> Response:
    parse_query(request, DeviceListQuery)  # its scope_user is the caller's (see there)
    listing = parse_list(request, DEVICES)
    async with transaction(request) as session:
        user = await _owner(request, session)
        devices = _service(request, session)
        total, items = await devices.list(user, listing)
        users = await devices.users_of(items)
    return render(
        page_of(
            listing,
            total,
            [
                device_response(
                    d, users.get(d.user_id) if d.user_id else None, hydrate=listing.hydrate
                )
                for d in items
            ],
        )
    )


async def get(request: Request) -> Response:
    device_id = path_param(request, "device_id", uuid.UUID)
    query = parse_query(request, DeviceQuery)
    async with transaction(request) as session:
        user = await _owner(request, session)
        devices = _service(request, session)
        device = await devices.get(user, device_id, query.user_code)
        owner = await devices.user_of(device)
    return render(device_response(device, owner, hydrate=query.hydrate))


async def update(request: Request) -> Response:
    device_id = path_param(request, "device_id", uuid.UUID)
    body = await parse_json(request, OAuthDeviceUpdate)
    async with transaction(request) as session:
        user = await _owner(request, session)
        devices = _service(request, session)
        device = await devices.owned(user, device_id)
        unlocked = await devices.update(device, body)
    if unlocked:
        # Only once the unlock is stored: a failed commit must leave the tokens revoked.
        await IdentityState.of(request).revocations.restore_device(device.id)
    return render(device_response(device, user, hydrate=True))


async def verify(request: Request) -> Response:
    device_id = path_param(request, "device_id", uuid.UUID)
    body = await parse_json(request, OAuthDeviceVerificationRequest)
    async with transaction(request) as session:
        user = await _owner(request, session)
        outcome = await _service(request, session).verify(user, device_id, body)
    # A refusal is raised only now, so the failed attempt it counted is committed.
    if isinstance(outcome, Refused):
        raise outcome.error
    return render(device_response(outcome, user, hydrate=True))


async def delete(request: Request) -> Response:
    device_id = path_param(request, "device_id", uuid.UUID)
    async with transaction(request) as session:
        user = await _owner(request, session)
        devices = _service(request, session)
        await devices.delete(await devices.owned(user, device_id))
    return render_null()


def routes() -> list[ApiRoute]:
    one = "/api/v1/devices/{device_id:uuid_param}"
    tags = ["authorized_devices"]
    return [
        api_route(
            "/api/v1/device_authorization",
            authorize,
            method="POST",
            summary="Device Authorization",
            tags=["authentication"],
            auth=False,
            form=DeviceAuthorizationForm,
            response=OAuthDeviceAuthorizationResponse,
            errors=(422,),
        ),
        api_route(
            "/api/v1/devices",
            list_devices,
            method="GET",
            summary="List Authorized Devices",
            tags=tags,
            query=LIST_QUERY,
            response=Page[OAuthDeviceResponse],
            errors=(400, 401, 422),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Authorization Device",
            tags=tags,
            query=DeviceQuery,
            response=OAuthDeviceResponse,
            errors=(401, 404, 422),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Authorized Device",
            tags=tags,
            body=OAuthDeviceUpdate,
            response=OAuthDeviceResponse,
            errors=(401, 404, 422),
        ),
        api_route(
            one + "/verify",
            verify,
            method="PUT",
            summary="Verify Authorized Device",
            tags=tags,
            body=OAuthDeviceVerificationRequest,
            response=OAuthDeviceResponse,
            errors=(400, 401, 404, 422),
        ),
        api_route(
            one,
            delete,
            method="DELETE",
            summary="Delete Authorized Device",
            tags=tags,
            errors=(401, 404, 422),
        ),
    ]
