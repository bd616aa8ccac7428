"""``/run_wait_conditions``: create, list, get, the poller's lease (``PUT``) and
``resolve``."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery, ScopedListQuery
from tracking.run_wait_condition.repository import RUN_WAIT_CONDITIONS
from tracking.run_wait_condition.schemas import (
    RunWaitConditionLeaseUpdate,
    RunWaitConditionRequest,
    RunWaitConditionResolveRequest,
    RunWaitConditionResponse,
    RunWaitConditionStatus,
    run_wait_condition_response,
)
from tracking.run_wait_condition.service import RunWaitConditionService

LIST_QUERY = RUN_WAIT_CONDITIONS.query_model(extra=query_extras(ScopedListQuery))


async def list_(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, RUN_WAIT_CONDITIONS)
    query = parse_query(request, ScopedListQuery)
    async with transaction(request) as session:
        service = RunWaitConditionService(session)
        total, items = await service.list_page(listing, query, listing.hydrate)
    return await render_page(request, listing, total, items, run_wait_condition_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await parse_json(request, RunWaitConditionRequest)
    async with transaction(request) as session:
        item = await RunWaitConditionService(session).create(body, user_id)
    return await render_one(request, item, run_wait_condition_response, hydrate=True)


def _condition_id(request: Request) -> uuid.UUID:
    return path_param(request, "run_wait_condition_id", uuid.UUID)


async def get(request: Request) -> Response:
    caller_id(request)
    condition_id = _condition_id(request)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await RunWaitConditionService(session).get(condition_id, query.hydrate)
    return await render_one(request, item, run_wait_condition_response, hydrate=query.hydrate)


async def lease(request: Request) -> Response:
    user_id = caller_id(request)
    condition_id = _condition_id(request)
    body = await parse_json(request, RunWaitConditionLeaseUpdate)
    async with transaction(request) as session:
        status = await RunWaitConditionService(session).lease(condition_id, body, user_id)
    return render(status.value)


async def resolve(request: Request) -> Response:
    user_id = caller_id(request)
    condition_id = _condition_id(request)
    body = await parse_json(request, RunWaitConditionResolveRequest)
    async with transaction(request) as session:
        item = await RunWaitConditionService(session).resolve(condition_id, body, user_id)
    return await render_one(request, item, run_wait_condition_response, hydrate=True)


def routes() -> list[ApiRoute]:
    many = "/api/v1/run_wait_conditions"
    one = many + "/{run_wait_condition_id:uuid_param}"
    tags = ["run_wait_conditions"]
    return [
        api_route(
            many,
            create,
            method="POST",
            summary="Create Run Wait Condition",
            tags=tags,
            body=RunWaitConditionRequest,
            response=RunWaitConditionResponse,
            errors=(403, 404, 409),
        ),
        api_route(
            many,
            list_,
            method="GET",
            summary="List Wait Conditions",
            tags=tags,
            query=LIST_QUERY,
            response=Page[RunWaitConditionResponse],
            errors=(400, 404),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Run Wait Condition",
            tags=tags,
            query=HydrateQuery,
            response=RunWaitConditionResponse,
            errors=(404,),
        ),
        api_route(
            one,
            lease,
            method="PUT",
            summary="Update Run Wait Condition Lease",
            tags=tags,
            body=RunWaitConditionLeaseUpdate,
            response=RunWaitConditionStatus,
            errors=(404,),
        ),
        api_route(
            one + "/resolve",
            resolve,
            method="PUT",
            summary="Resolve Run Wait Condition",
            tags=tags,
            body=RunWaitConditionResolveRequest,
            response=RunWaitConditionResponse,
            errors=(400, 403, 404),
        ),
    ]
