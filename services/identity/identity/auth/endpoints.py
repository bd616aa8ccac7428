"""``/login``, ``/logout``, ``/current-user``, and the internal exchange of API keys."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from identity.api_key.service import APIKeyService
from identity.auth.schemas import LoginForm, OAuthTokenResponse
from identity.auth.service import TokenService
from identity.device.service import DeviceService, Refused, record_device_use
from identity.settings import Settings
from identity.state import IdentityState
from identity.user.schemas import UserQuery, UserResponse, UserUpdate, user_response
from identity.user.service import UserService
from shared.auth import APIKeyRefused, APIKeyTokens, Principal, TokenKind, require_principal
from shared.auth.api_keys import EXCHANGE_PATH, APIKeyExchange, APIKeyToken
from shared.db import transaction
from shared.errors import OAuthError, RequestValidationFailed
from shared.responses import NO_STORE, render, render_null
from shared.routing import ApiRoute, api_route, parse_form, parse_json, parse_query
from shared.throttle import LoginThrottle


async def login(request: Request) -> Response:
    state = IdentityState.of(request)
    try:
        form = await parse_form(request, LoginForm)
    except RequestValidationFailed:
        raise OAuthError("invalid_request", "Each parameter may be given once.") from None
    settings: Settings = state.settings
    client = request.client.host if request.client else None
    throttle = LoginThrottle(state.redis, state.keys, settings)
    clock = state.clock
    async with transaction(request) as session:
        devices = DeviceService(session, settings, state.revocations, clock)
        api_keys = APIKeyService(session, state.revocations, clock)
        issued = await TokenService(settings, state.keyring, clock).login(
            form, UserService(session, clock=clock), devices, api_keys, throttle, client
        )
    # Raised after the commit, so the device's failed attempt or new interval is kept.
    if isinstance(issued, Refused):
        raise issued.error
    response = render(issued.response, headers=NO_STORE)
    if issued.set_cookie:
        response.set_cookie(
            settings.session_cookie_name,
            issued.response.access_token,
            max_age=int(issued.lifetime.total_seconds()) if issued.lifetime else None,
            httponly=True,
            samesite="lax",
            secure=settings.cookie_secure,
        )
    return response


async def logout(request: Request) -> Response:
    """Clear the cookie and revoke the presented token, if it is a valid one."""
    state = IdentityState.of(request)
    settings: Settings = state.settings
    if isinstance(request.user, Principal):
        token = request.user.token
        await state.revocations.revoke_token(token.jti, token.expires_at)
    response = render_null()
    response.delete_cookie(settings.session_cookie_name, httponly=True, samesite="lax")
    return response


async def get_current_user(request: Request) -> Response:
    state = IdentityState.of(request)
    query = parse_query(request, UserQuery)
    caller = require_principal(request)
    async with transaction(request) as session:
        user = await UserService(session, clock=state.clock).current(caller)
    # The zenml client and the dashboard ask who they are at the start of every session:
    # the moment a user is active, and a device "used" (its last_login). Writes of their
    # own, after the read.
    await state.user_activity.seen(state.clock())
    device_id = caller.token.device_id
    if device_id is not None:
        await record_device_use(state.sessionmaker, device_id, state.clock())
    return render(user_response(user, hydrate=query.hydrate))


async def update_current_user(request: Request) -> Response:
    state = IdentityState.of(request)
    update = await parse_json(request, UserUpdate)
    caller = require_principal(request)
    async with transaction(request) as session:
        users = UserService(session, state.revocations, state.clock)
        user = await users.update_current(caller, update)
    return render(user_response(user, hydrate=True))


async def exchange_api_key(request: Request) -> Response:
    """A ``ZENKEY_`` key presented to another service as its bearer: the token of a login
    with it (:mod:`shared.auth.api_keys`). Service tokens only; not routed by the gateway."""
    require_principal(request, kinds=(TokenKind.SERVICE,))
    body = await parse_json(request, APIKeyExchange)
    tokens: APIKeyTokens = IdentityState.of(request).api_key_tokens
    try:
        issued = await tokens.source.exchange(body.api_key, body.client)
    except APIKeyRefused as exc:
        issued = APIKeyToken(refused=exc.reason)
    return render(issued, headers=NO_STORE)


def routes() -> list[ApiRoute]:
    tags = ["authentication"]
    return [
        api_route(
            "/api/v1/login",
            login,
            method="POST",
            summary="Token",
            tags=tags,
            auth=False,
            form=LoginForm,
            response=OAuthTokenResponse,
            errors=(400, 401, 429),
        ),
        api_route(
            "/api/v1/logout",
            logout,
            method="GET",
            summary="Logout",
            tags=tags,
            auth=False,
        ),
        api_route(
            "/api/v1/current-user",
            get_current_user,
            method="GET",
            summary="Get Current User",
            tags=["users"],
            query=UserQuery,
            response=UserResponse,
            errors=(404,),
        ),
        api_route(
            "/api/v1/current-user",
            update_current_user,
            method="PUT",
            summary="Update Myself",
            tags=["users"],
            body=UserUpdate,
            response=UserResponse,
            errors=(400, 403, 404, 409),
        ),
        api_route(
            EXCHANGE_PATH,
            exchange_api_key,
            method="POST",
            summary="Exchange Api Key",
            tags=["internal"],
            body=APIKeyExchange,
            response=APIKeyToken,
            errors=(401, 429),
        ),
    ]
