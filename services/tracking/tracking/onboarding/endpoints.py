"""``GET /internal/v1/onboarding_state``: the onboarding steps tracking's data shows, which
identity asks for its ``/api/v1/onboarding_state``. Service tokens only; not routed by the
gateway."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from shared.auth import TokenKind, require_principal
from shared.db import transaction
from shared.onboarding import ONBOARDING_PATH, OnboardingStep
from shared.responses import render
from shared.routing import ApiRoute, api_route
from tracking.onboarding.service import OnboardingService


async def get(request: Request) -> Response:
    require_principal(request, kinds=(TokenKind.SERVICE,))
    async with transaction(request) as session:
        steps = await OnboardingService(session).completed()
    return render([step.value for step in steps])


def routes() -> list[ApiRoute]:
    return [
        api_route(
            ONBOARDING_PATH,
            get,
            method="GET",
            summary="Get Onboarding State",
            tags=["internal"],
            response=list[OnboardingStep],
            errors=(401,),
        ),
    ]
