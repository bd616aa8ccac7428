"""``/services`` (and the deprecated ``/workspaces/{project}/services`` create)."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.core.aliases import scoped_body
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import (
    HydrateQuery,
    ProjectQuery,
    ScopedListQuery,
    WorkspaceListQuery,
)
from tracking.service.repository import SERVICES
from tracking.service.schemas import (
    ServiceRequest,
    ServiceResponse,
    ServiceUpdate,
    service_response,
)
from tracking.service.service import ServiceService

LIST_QUERY = SERVICES.query_model(extra=query_extras(ScopedListQuery))


async def list_(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, SERVICES)
    query = parse_query(request, WorkspaceListQuery)
    async with transaction(request) as session:
        total, items = await ServiceService(session).list_page(listing, query)
    return await render_page(request, listing, total, items, service_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await scoped_body(request, ServiceRequest)
    async with transaction(request) as session:
        item = await ServiceService(session).create(body, user_id)
    return await render_one(request, item, service_response, hydrate=True)


async def get(request: Request) -> Response:
    caller_id(request)
    service_id = path_param(request, "service_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await ServiceService(session).get(service_id)
    return await render_one(request, item, service_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    caller_id(request)
    service_id = path_param(request, "service_id", uuid.UUID)
    body = await parse_json(request, ServiceUpdate)
    async with transaction(request) as session:
        item = await ServiceService(session).update(service_id, body)
    return await render_one(request, item, service_response, hydrate=True)


async def delete(request: Request) -> Response:
    caller_id(request)
    service_id = path_param(request, "service_id", uuid.UUID)
    async with transaction(request) as session:
        await ServiceService(session).delete(service_id)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/services"
    one = many + "/{service_id:uuid_param}"
    tags = ["services"]
    return [
        api_route(
            many,
            create,
            method="POST",
            query=ProjectQuery,
            summary="Create Service",
            tags=tags,
            body=ServiceRequest,
            response=ServiceResponse,
            errors=(404, 409),
        ),
        api_route(
            many,
            list_,
            method="GET",
            summary="List Services",
            tags=tags,
            query=LIST_QUERY,
            response=Page[ServiceResponse],
            errors=(400, 404),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Service",
            tags=tags,
            query=HydrateQuery,
            response=ServiceResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Service",
            tags=tags,
            body=ServiceUpdate,
            response=ServiceResponse,
            errors=(404,),
        ),
        api_route(one, delete, method="DELETE", summary="Delete Service", tags=tags, errors=(404,)),
    ]
