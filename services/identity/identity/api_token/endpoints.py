"""``GET /api/v1/api_token``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from identity.api_token.schemas import APITokenQuery
from identity.api_token.service import APITokenService
from identity.auth.service import TokenService
from identity.state import IdentityState
from identity.user.service import UserService
from shared.auth import require_principal
from shared.db import transaction
from shared.responses import NO_STORE, render
from shared.routing import ApiRoute, api_route, parse_query


async def api_token(request: Request) -> Response:
    state = IdentityState.of(request)
    query = parse_query(request, APITokenQuery)
    caller = require_principal(request)
    async with transaction(request) as session:
        tokens = TokenService(state.settings, state.keyring, state.clock)
        service = APITokenService(tokens, state.workload_scopes, UserService(session))
        token = await service.issue(caller, query)
    return render(token, headers=NO_STORE)


def routes() -> list[ApiRoute]:
    return [
        api_route(
            "/api/v1/api_token",
            api_token,
            method="GET",
            summary="Api Token",
            tags=["authentication"],
            query=APITokenQuery,
            response=str,
            errors=(400, 401, 422, 503),
        ),
    ]
