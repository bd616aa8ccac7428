"""``/hook_invocations``: what a run's and its steps' hooks did (the client records them)."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery
from tracking.hook_invocation.repository import HOOK_INVOCATIONS
from tracking.hook_invocation.schemas import (
    HookInvocationListQuery,
    HookInvocationRequest,
    HookInvocationResponse,
    hook_invocation_response,
)
from tracking.hook_invocation.service import HookInvocationService

LIST_QUERY = HOOK_INVOCATIONS.query_model(extra=query_extras(HookInvocationListQuery))


async def list_hook_invocations(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, HOOK_INVOCATIONS)
    query = parse_query(request, HookInvocationListQuery)
    async with transaction(request) as session:
        total, items = await HookInvocationService(session).list_page(listing, query)
    return await render_page(request, listing, total, items, hook_invocation_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await parse_json(request, HookInvocationRequest)
    async with transaction(request) as session:
        item = await HookInvocationService(session).create(body, user_id)
    return await render_one(request, item, hook_invocation_response, hydrate=True)


async def get(request: Request) -> Response:
    caller_id(request)
    invocation_id = path_param(request, "hook_invocation_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await HookInvocationService(session).get(invocation_id)
    return await render_one(request, item, hook_invocation_response, hydrate=query.hydrate)


async def delete(request: Request) -> Response:
    caller_id(request)
    invocation_id = path_param(request, "hook_invocation_id", uuid.UUID)
    async with transaction(request) as session:
        await HookInvocationService(session).delete(invocation_id)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/hook_invocations"
    one = many + "/{hook_invocation_id:uuid_param}"
    tags = ["hook_invocations"]
    return [
        api_route(
            many,
            list_hook_invocations,
            method="GET",
            summary="List Hook Invocations",
            tags=tags,
            query=LIST_QUERY,
            response=Page[HookInvocationResponse],
            errors=(400, 404),
        ),
        api_route(
            many,
            create,
            method="POST",
            summary="Create Hook Invocation",
            tags=tags,
            body=HookInvocationRequest,
            response=HookInvocationResponse,
            errors=(404, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Hook Invocation",
            tags=tags,
            query=HydrateQuery,
            response=HookInvocationResponse,
            errors=(404,),
        ),
        api_route(
            one,
            delete,
            method="DELETE",
            summary="Delete Hook Invocation",
            tags=tags,
            errors=(404,),
        ),
    ]
