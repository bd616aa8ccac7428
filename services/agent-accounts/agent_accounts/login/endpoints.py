"""``/login`` (password, api-key and device-code grants) and ``/logout``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from agent_accounts.core.auth import AccountCaller
from agent_accounts.core.errors import TokenError
from agent_accounts.core.tokens import SignedToken, TokenIssuer
from agent_accounts.login.schemas import LoginForm, TokenResponse
from agent_accounts.login.service import (
    API_KEY,
    DEVICE_CODE,
    PASSWORD,
    LoginService,
    resolve_grant,
    token_response,
)
from agent_accounts.state import AgentState
from shared.auth import bearer_token
from shared.db import transaction
from shared.responses import NO_STORE, render
from shared.routing import ApiRoute, api_route, parse_form
from shared.throttle import LoginThrottle

TAGS = ["auth"]


async def login(request: Request) -> Response:
    state = AgentState.of(request)
    form = await parse_form(request, LoginForm)
    issuer: TokenIssuer = state.issuer
    settings = state.settings
    # The peer's address, or X-Forwarded-For's when the peer is the gateway (uvicorn
    # trusts the header only from FORWARDED_ALLOW_IPS).
    client = request.client.host if request.client else None
    grant = resolve_grant(form, settings)
    throttle = LoginThrottle(state.redis, state.keys, settings)
    async with transaction(request) as session:
        service = LoginService(session, settings, issuer, state.clock, throttle, client)
        issued: SignedToken | TokenError
        if grant == PASSWORD:
            issued = await service.password(form)
        elif grant == DEVICE_CODE:
            issued = await service.device_code(form)
        elif grant == API_KEY:
            caller = request.user if isinstance(request.user, AccountCaller) else None
            issued = await service.api_key(caller, bearer_token(request))
        else:
            raise TokenError("unsupported_grant_type", "This grant type is not supported.")
    # Raised after the commit: a wrong device code stays counted, a poll stays recorded.
    if isinstance(issued, TokenError):
        raise issued
    return render(token_response(issued), headers=NO_STORE)


async def logout(request: Request) -> Response:
    """Ends the presented session token (its jti is revoked until it would expire)."""
    user = request.user
    if isinstance(user, AccountCaller) and user.token is not None:
        await AgentState.of(request).revocations.revoke_token(user.token.jti, user.token.expires_at)
    return Response(status_code=204)


def routes() -> list[ApiRoute]:
    return [
        api_route("/api/v1/login", login, method="POST", summary="Log in (token endpoint)",
                  tags=TAGS, form=LoginForm, response=TokenResponse, auth=False,
                  errors=(400, 401, 429)),
        api_route("/api/v1/logout", logout, method="POST", summary="Log out", tags=TAGS,
                  status_code=204, auth=False),
    ]  # fmt: skip
