"""``/stacks``: stacks of components (global, not project-scoped)."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.component.schemas import UserScopeQuery
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery, ProjectQuery
from tracking.stack.repository import STACKS
from tracking.stack.schemas import StackRequest, StackResponse, StackUpdate, stack_response
from tracking.stack.service import StackService

StackListQuery = STACKS.query_model(
    extra={**query_extras(UserScopeQuery), **query_extras(ProjectQuery)}
)


def _stack_id(request: Request) -> uuid.UUID:
    return path_param(request, "stack_id", uuid.UUID)


async def list_stacks(request: Request) -> Response:
    viewer = caller(request).user_id
    listing = await read_list(request, STACKS)
    scope = parse_query(request, UserScopeQuery)
    async with transaction(request) as session:
        total, stacks = await StackService(session).list_page(listing, scope, viewer)
    return await render_page(request, listing, total, stacks, stack_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await parse_json(request, StackRequest)
    async with transaction(request) as session:
        stacks = StackService(session)
        (stack,) = await stacks.composed([await stacks.create(body, user_id)], user_id)
    return await render_one(request, stack, stack_response, hydrate=True)


async def get(request: Request) -> Response:
    viewer = caller(request).user_id
    stack_id = _stack_id(request)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        stacks = StackService(session)
        (stack,) = await stacks.composed(
            [await stacks.get(stack_id)], viewer, hydrate=query.hydrate
        )
    return await render_one(request, stack, stack_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    viewer = caller(request).user_id
    stack_id = _stack_id(request)
    body = await parse_json(request, StackUpdate)
    async with transaction(request) as session:
        stacks = StackService(session)
        updated = await stacks.update(await stacks.get(stack_id), body, viewer)
        (stack,) = await stacks.composed([updated], viewer)
    return await render_one(request, stack, stack_response, hydrate=True)


async def delete(request: Request) -> Response:
    caller(request)
    stack_id = _stack_id(request)
    async with transaction(request) as session:
        stacks = StackService(session)
        await stacks.delete(await stacks.get(stack_id))
    return render_null()


def routes() -> list[ApiRoute]:
    base, tags = "/api/v1/stacks", ["stacks"]
    one = base + "/{stack_id:uuid_param}"
    return [
        api_route(
            base,
            list_stacks,
            method="GET",
            summary="List Stacks",
            tags=tags,
            query=StackListQuery,
            response=Page[StackResponse],
            errors=(400, 422),
        ),
        api_route(
            base,
            create,
            method="POST",
            summary="Create Stack",
            tags=tags,
            query=ProjectQuery,
            body=StackRequest,
            response=StackResponse,
            errors=(400, 404, 409, 422),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Stack",
            tags=tags,
            query=HydrateQuery,
            response=StackResponse,
            errors=(404, 422),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Stack",
            tags=tags,
            body=StackUpdate,
            response=StackResponse,
            errors=(400, 403, 404, 409, 422),
        ),
        api_route(
            one, delete, method="DELETE", summary="Delete Stack", tags=tags, errors=(403, 404, 422)
        ),
    ]
