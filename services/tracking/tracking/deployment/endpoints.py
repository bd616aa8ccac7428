"""``/deployments``: pipeline snapshots served by a deployer."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from shared.auth import ScopeKind
from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query
from tracking.core.auth import MANAGING_KINDS, caller, caller_id, object_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery, ScopedListQuery
from tracking.deployment.repository import DEPLOYMENTS
from tracking.deployment.schemas import (
    DeploymentRequest,
    DeploymentResponse,
    DeploymentUpdate,
    deployment_response,
)
from tracking.deployment.service import DeploymentService

LIST_QUERY = DEPLOYMENTS.query_model(extra=query_extras(ScopedListQuery))
SCOPE = ScopeKind.DEPLOYMENT


async def list_(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, DEPLOYMENTS)
    query = parse_query(request, ScopedListQuery)
    async with transaction(request) as session:
        total, items = await DeploymentService(session).list_page(listing, query)
    return await render_page(request, listing, total, items, deployment_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request, kinds=MANAGING_KINDS)
    body = await parse_json(request, DeploymentRequest)
    async with transaction(request) as session:
        item = await DeploymentService(session).create(body, user_id)
    return await render_one(request, item, deployment_response, hydrate=True)


async def get(request: Request) -> Response:
    deployment_id = object_id(request, "deployment_id", SCOPE)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await DeploymentService(session).get(deployment_id)
    return await render_one(request, item, deployment_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    deployment_id = object_id(request, "deployment_id", SCOPE)
    user_id = caller_id(request)
    body = await parse_json(request, DeploymentUpdate)
    async with transaction(request) as session:
        item = await DeploymentService(session).update(deployment_id, body, user_id)
    return await render_one(request, item, deployment_response, hydrate=True)


async def delete(request: Request) -> Response:
    deployment_id = object_id(request, "deployment_id", SCOPE)
    async with transaction(request) as session:
        await DeploymentService(session).delete(deployment_id)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/deployments"
    one = many + "/{deployment_id:uuid_param}"
    tags = ["deployments"]
    return [
        api_route(
            many,
            list_,
            method="GET",
            summary="List Deployments",
            tags=tags,
            query=LIST_QUERY,
            response=Page[DeploymentResponse],
            errors=(400, 404),
        ),
        api_route(
            many,
            create,
            method="POST",
            summary="Create Deployment",
            tags=tags,
            body=DeploymentRequest,
            response=DeploymentResponse,
            errors=(400, 404, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Deployment",
            tags=tags,
            query=HydrateQuery,
            response=DeploymentResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Deployment",
            tags=tags,
            body=DeploymentUpdate,
            response=DeploymentResponse,
            errors=(404, 409),
        ),
        api_route(
            one, delete, method="DELETE", summary="Delete Deployment", tags=tags, errors=(400, 404)
        ),
    ]
