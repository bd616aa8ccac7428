"""``/flavors``: the stack component flavors tracking knows (list and get; they are built
in, so not created, changed or deleted through the API, and ``PATCH /flavors/sync`` has
nothing to bring in)."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import page_of, read_list
from shared.pagination import Page
from shared.responses import render, render_null
from shared.routing import ApiRoute, api_route, parse_query, path_param
from tracking.component.schemas import FlavorResponse
from tracking.core.auth import caller, caller_id
from tracking.core.listing import query_extras
from tracking.core.schemas import HydrateQuery
from tracking.flavor.repository import FLAVOR_LIST
from tracking.flavor.schemas import FlavorListQuery, flavor_response
from tracking.flavor.service import FlavorService, flavor_by_id

LIST_QUERY = FLAVOR_LIST.query_model(extra=query_extras(FlavorListQuery))


async def list_flavors(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, FLAVOR_LIST)
    query = parse_query(request, FlavorListQuery)
    async with transaction(request) as session:
        total, flavors = await FlavorService(session).list_page(listing, query)
    items = [flavor_response(flavor, listing.hydrate) for flavor in flavors]
    return render(page_of(listing, total, items))


async def get(request: Request) -> Response:
    caller_id(request)
    flavor_id = path_param(request, "flavor_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    return render(flavor_response(flavor_by_id(flavor_id), query.hydrate))


async def sync(request: Request) -> Response:
    """The reference's re-registration of its built-in flavors; here they are the code's
    registry, always in sync, so any user's call succeeds with nothing to do."""
    caller_id(request)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/flavors"
    return [
        api_route(
            many,
            list_flavors,
            method="GET",
            summary="List Flavors",
            tags=["flavors"],
            query=LIST_QUERY,
            response=Page[FlavorResponse],
            errors=(400, 404),
        ),
        api_route(
            many + "/{flavor_id}",
            get,
            method="GET",
            summary="Get Flavor",
            tags=["flavors"],
            query=HydrateQuery,
            response=FlavorResponse,
            errors=(404,),
        ),
        api_route(many + "/sync", sync, method="PATCH", summary="Sync Flavors", tags=["flavors"]),
    ]
