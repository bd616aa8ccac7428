"""``GET /internal/v1/workload_scopes/{kind}/{scope_id}``: other services ask whether a
workload token's object still accepts it. Service tokens only; not routed by the gateway."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.auth import ScopeKind, ScopeState, TokenKind, WorkloadScope, require_principal
from shared.auth.workload import SCOPE_PATH
from shared.db import transaction
from shared.errors import NotFound
from shared.responses import render
from shared.routing import ApiRoute, api_route, path_param
from tracking.settings import Settings
from tracking.state import TrackingState
from tracking.workload_scope.service import WorkloadScopeService


class ScopeNotFound(NotFound):
    def __init__(self, scope: WorkloadScope) -> None:
        super().__init__(f"Unable to get {scope.kind.label} with ID '{scope.id}': not found")


async def get(request: Request) -> Response:
    require_principal(request, kinds=(TokenKind.SERVICE,))
    scope = WorkloadScope(
        path_param(request, "kind", ScopeKind), path_param(request, "scope_id", uuid.UUID)
    )
    settings: Settings = TrackingState.of(request).settings
    async with transaction(request) as session:
        state = await WorkloadScopeService(
            session, settings.workload_token_expiration_leeway
        ).state(scope)
    if state is None:
        raise ScopeNotFound(scope)
    return render(state)


def routes() -> list[ApiRoute]:
    return [
        api_route(
            SCOPE_PATH + "/{kind}/{scope_id}",
            get,
            method="GET",
            summary="Get Workload Scope",
            tags=["internal"],
            response=ScopeState,
            errors=(401, 404),
        ),
    ]
