"""``/logs``: where the client wrote a run's or a step's logs (the client reads them from
there; the server keeps the reference)."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.core.auth import caller_id
from tracking.core.rendering import render_one
from tracking.core.schemas import HydrateQuery
from tracking.logs.schemas import LogsRequest, LogsResponse, LogsUpdate, logs_response
from tracking.logs.service import LogsService


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await parse_json(request, LogsRequest)
    async with transaction(request) as session:
        item = await LogsService(session).create(body, user_id)
    return await render_one(request, item, logs_response, hydrate=True)


async def get(request: Request) -> Response:
    caller_id(request)
    logs_id = path_param(request, "logs_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await LogsService(session).get(logs_id)
    return await render_one(request, item, logs_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    caller_id(request)
    logs_id = path_param(request, "logs_id", uuid.UUID)
    body = await parse_json(request, LogsUpdate)
    async with transaction(request) as session:
        item = await LogsService(session).update(logs_id, body)
    return await render_one(request, item, logs_response, hydrate=True)


def routes() -> list[ApiRoute]:
    many = "/api/v1/logs"
    one = many + "/{logs_id:uuid_param}"
    tags = ["logs"]
    return [
        api_route(
            many,
            create,
            method="POST",
            summary="Create Logs",
            tags=tags,
            body=LogsRequest,
            response=LogsResponse,
            errors=(404, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Logs",
            tags=tags,
            query=HydrateQuery,
            response=LogsResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Logs",
            tags=tags,
            body=LogsUpdate,
            response=LogsResponse,
            errors=(404,),
        ),
    ]
