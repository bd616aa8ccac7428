"""``/statistics`` (the server's stacks, components and projects, counted) and
``/component-types`` (the stack component types a stack may hold), for any user."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.responses import render
from shared.routing import ApiRoute, api_route
from tracking.component.flavors import StackComponentType
from tracking.core.auth import caller
from tracking.statistics.schemas import ServerStatistics
from tracking.statistics.service import StatisticsService


async def get_statistics(request: Request) -> Response:
    caller(request)
    async with transaction(request) as session:
        statistics = await StatisticsService(session).get()
    return render(statistics)


async def component_types(request: Request) -> Response:
    caller(request)
    return render([kind.value for kind in StackComponentType])


def routes() -> list[ApiRoute]:
    return [
        api_route(
            "/api/v1/statistics",
            get_statistics,
            method="GET",
            summary="Get Server Statistics",
            tags=["server"],
            response=ServerStatistics,
        ),
        api_route(
            "/api/v1/component-types",
            component_types,
            method="GET",
            summary="Get Stack Component Types",
            tags=["stack_components"],
            response=list[str],
        ),
    ]
