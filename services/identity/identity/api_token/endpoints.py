"""``GET /api/v1/api_token``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from identity.api_token.schemas import APITokenQuery
from identity.api_token.service import APITokenService
from identity.auth.endpoints import USER_TOKEN_KINDS, acting_user
from identity.auth.service import TokenService
from identity.user.service import UserService
from shared.auth import require_principal
from shared.db import transaction
from shared.responses import NO_STORE, render
from shared.routing import ApiRoute, api_route, parse_query


async def api_token(request: Request) -> Response:
    query = parse_query(request, APITokenQuery)
    principal = require_principal(request, kinds=USER_TOKEN_KINDS)
    async with transaction(request) as session:
        user = await acting_user(request, UserService(session), kinds=USER_TOKEN_KINDS)
        tokens = TokenService(request.state.settings, request.state.keyring)
        service = APITokenService(tokens, request.state.workload_scopes)
        token = await service.issue(user, principal.token, query)
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
