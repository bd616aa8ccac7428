"""``/login``, ``/logout`` and ``/current-user``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from identity.auth.schemas import LoginForm, OAuthTokenResponse
from identity.auth.service import TokenService
from identity.device.service import DeviceService, Refused, record_device_use
from identity.models import User
from identity.settings import Settings
from identity.user.schemas import UserQuery, UserResponse, UserUpdate, user_response
from identity.user.service import UserService
from shared.auth import Principal, TokenKind, require_principal
from shared.db import transaction
from shared.errors import OAuthError, RequestValidationFailed, Unauthorized
from shared.responses import NO_STORE, render, render_null
from shared.routing import ApiRoute, api_route, parse_form, parse_json, parse_query
from shared.throttle import LoginThrottle

MANAGING_KINDS = (TokenKind.ACCESS, TokenKind.DEVICE, TokenKind.GENERIC)
"""A user's tokens that may manage accounts, devices and the user itself. A workload
token (a pipeline's credential, bound to one run, schedule or deployment) may not: it is
refused with 401 ``AuthorizationException`` (security reference §1.3, class separation)."""
USER_TOKEN_KINDS = (*MANAGING_KINDS, TokenKind.WORKLOAD)
"""A user's tokens: what may read the current user and ask for API tokens."""


async def acting_user(
    request: Request, users: UserService, *, kinds: tuple[str, ...] = MANAGING_KINDS
) -> User:
    """The active user behind the request's token (401 when there is none, or when the
    token is not of ``kinds``)."""
    principal = require_principal(request, kinds=kinds)
    user = await users.repository.get(principal.user_id) if principal.user_id else None
    if user is None or not user.active:
        raise Unauthorized(
            f"Authentication error: user {principal.token.subject} is not active",
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
    return user


async def login(request: Request) -> Response:
    try:
        form = await parse_form(request, LoginForm)
    except RequestValidationFailed:
        raise OAuthError("invalid_request", "Each parameter may be given once.") from None
    settings: Settings = request.state.settings
    client = request.client.host if request.client else None
    throttle = LoginThrottle(request.state.redis, request.state.keys, settings)
    async with transaction(request) as session:
        devices = DeviceService(session, settings, request.state.revocations)
        issued = await TokenService(settings, request.state.keyring).login(
            form, UserService(session), devices, throttle, client
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
    settings: Settings = request.state.settings
    if isinstance(request.user, Principal):
        token = request.user.token
        await request.state.revocations.revoke_token(token.jti, token.expires_at)
    response = render_null()
    response.delete_cookie(settings.session_cookie_name, httponly=True, samesite="lax")
    return response


async def get_current_user(request: Request) -> Response:
    query = parse_query(request, UserQuery)
    async with transaction(request) as session:
        user = await acting_user(request, UserService(session), kinds=USER_TOKEN_KINDS)
    device_id = require_principal(request).token.device_id
    if device_id is not None:
        # The zenml client asks who it is at the start of every session: the moment a
        # device is "used", as its last_login shows. A write of its own, after the read.
        await record_device_use(request.state.sessionmaker, device_id)
    return render(user_response(user, hydrate=query.hydrate))


async def update_current_user(request: Request) -> Response:
    update = await parse_json(request, UserUpdate)
    async with transaction(request) as session:
        users = UserService(session, request.state.revocations)
        user = await acting_user(request, users)
        user = await users.update(user, update, by_admin=user.is_admin, actor=str(user.id))
    return render(user_response(user, hydrate=True))


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
    ]
