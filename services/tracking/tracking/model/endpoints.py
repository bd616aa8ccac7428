"""``/models`` (and the deprecated ``POST /workspaces/{project}/models``)."""

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
from tracking.core.schemas import HydrateQuery, ProjectQuery, ScopedListQuery
from tracking.model.repository import MODELS
from tracking.model.schemas import ModelRequest, ModelResponse, ModelUpdate, model_response
from tracking.model.service import ModelService

LIST_QUERY = MODELS.query_model(extra=query_extras(ScopedListQuery))


async def list_(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, MODELS)
    query = parse_query(request, ScopedListQuery)
    async with transaction(request) as session:
        total, items = await ModelService(session).list_page(listing, query)
    return await render_page(request, listing, total, items, model_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await scoped_body(request, ModelRequest)
    async with transaction(request) as session:
        item = await ModelService(session).create(body, user_id)
    return await render_one(request, item, model_response, hydrate=True)


async def get(request: Request) -> Response:
    caller_id(request)
    model_id = path_param(request, "model_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await ModelService(session).get(model_id)
    return await render_one(request, item, model_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    user_id = caller_id(request)
    model_id = path_param(request, "model_id", uuid.UUID)
    body = await parse_json(request, ModelUpdate)
    async with transaction(request) as session:
        item = await ModelService(session).update(model_id, body, user_id)
    return await render_one(request, item, model_response, hydrate=True)


async def delete(request: Request) -> Response:
    caller_id(request)
    model_id = path_param(request, "model_id", uuid.UUID)
    async with transaction(request) as session:
        await ModelService(session).delete(model_id)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/models"
    one = many + "/{model_id:uuid_param}"
    tags = ["models"]
    return [
        api_route(
            many,
            list_,
            method="GET",
            summary="List Models",
            tags=tags,
            query=LIST_QUERY,
            response=Page[ModelResponse],
            errors=(400, 404),
        ),
        api_route(
            many,
            create,
            method="POST",
            summary="Create Model",
            tags=tags,
            query=ProjectQuery,
            body=ModelRequest,
            response=ModelResponse,
            errors=(400, 404, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Model",
            tags=tags,
            query=HydrateQuery,
            response=ModelResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Model",
            tags=tags,
            body=ModelUpdate,
            response=ModelResponse,
            errors=(400, 404, 409),
        ),
        api_route(
            one, delete, method="DELETE", summary="Delete Model", tags=tags, errors=(400, 404)
        ),
    ]
