"""``/flavors``: the stack component flavors tracking knows, built in (code, always in
sync, so ``PATCH /flavors/sync`` has nothing to bring in) and custom (registered, changed
and deleted through the API)."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.component.schemas import FlavorResponse
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery
from tracking.flavor.repository import FLAVOR_LIST
from tracking.flavor.schemas import FlavorListQuery, FlavorRequest, FlavorUpdate, flavor_response
from tracking.flavor.service import FlavorService

LIST_QUERY = FLAVOR_LIST.query_model(extra=query_extras(FlavorListQuery))


def _flavor_id(request: Request) -> uuid.UUID:
    caller_id(request)
    return path_param(request, "flavor_id", uuid.UUID)


async def list_flavors(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, FLAVOR_LIST)
    query = parse_query(request, FlavorListQuery)
    async with transaction(request) as session:
        total, flavors = await FlavorService(session).list_page(listing, query)
    return await render_page(request, listing, total, flavors, flavor_response)


async def get(request: Request) -> Response:
    flavor_id = _flavor_id(request)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        flavor = await FlavorService(session).get(flavor_id)
    return await render_one(request, flavor, flavor_response, hydrate=query.hydrate)


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await parse_json(request, FlavorRequest)
    async with transaction(request) as session:
        flavor = await FlavorService(session).create(body, user_id)
    return await render_one(request, flavor, flavor_response, hydrate=True)


async def update(request: Request) -> Response:
    flavor_id = _flavor_id(request)
    body = await parse_json(request, FlavorUpdate)
    async with transaction(request) as session:
        flavor = await FlavorService(session).update(flavor_id, body)
    return await render_one(request, flavor, flavor_response, hydrate=True)


async def delete(request: Request) -> Response:
    flavor_id = _flavor_id(request)
    async with transaction(request) as session:
        await FlavorService(session).delete(flavor_id)
    return render_null()


async def sync(request: Request) -> Response:
    """The reference's re-registration of its built-in flavors; here they are the code's
    registry, always in sync, so any user's call succeeds with nothing to do."""
    caller_id(request)
    return render_null()


def routes() -> list[ApiRoute]:
    many, tags = "/api/v1/flavors", ["flavors"]
    one = many + "/{flavor_id:uuid_param}"
    return [
        api_route(
            many,
            list_flavors,
            method="GET",
            summary="List Flavors",
            tags=tags,
            query=LIST_QUERY,
            response=Page[FlavorResponse],
            errors=(400, 404),
        ),
        api_route(
            many,
            create,
            method="POST",
            summary="Create Flavor",
            tags=tags,
            body=FlavorRequest,
            response=FlavorResponse,
            errors=(400, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Flavor",
            tags=tags,
            query=HydrateQuery,
            response=FlavorResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Flavor",
            tags=tags,
            body=FlavorUpdate,
            response=FlavorResponse,
            errors=(400, 404, 409),
        ),
        api_route(one, delete, method="DELETE", summary="Delete Flavor", tags=tags, errors=(404,)),
        api_route(many + "/sync", sync, method="PATCH", summary="Sync Flavors", tags=tags),
    ]
