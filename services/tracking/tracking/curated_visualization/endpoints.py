"""``/curated_visualizations``: create, get, update and delete."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.responses import render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.core.auth import caller_id
from tracking.core.rendering import render_one
from tracking.core.schemas import HydrateQuery
from tracking.curated_visualization.schemas import (
    CuratedVisualizationRequest,
    CuratedVisualizationResponse,
    CuratedVisualizationUpdate,
    curated_visualization_response,
)
from tracking.curated_visualization.service import CuratedVisualizationService


def _id(request: Request) -> uuid.UUID:
    return path_param(request, "visualization_id", uuid.UUID)


async def create(request: Request) -> Response:
    caller_id(request)
    body = await parse_json(request, CuratedVisualizationRequest)
    async with transaction(request) as session:
        item = await CuratedVisualizationService(session).create(body)
    return await render_one(request, item, curated_visualization_response, hydrate=True)


async def get(request: Request) -> Response:
    caller_id(request)
    curated_id = _id(request)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await CuratedVisualizationService(session).get(curated_id)
    return await render_one(request, item, curated_visualization_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    caller_id(request)
    curated_id = _id(request)
    body = await parse_json(request, CuratedVisualizationUpdate)
    async with transaction(request) as session:
        item = await CuratedVisualizationService(session).update(curated_id, body)
    return await render_one(request, item, curated_visualization_response, hydrate=True)


async def delete(request: Request) -> Response:
    caller_id(request)
    curated_id = _id(request)
    async with transaction(request) as session:
        await CuratedVisualizationService(session).delete(curated_id)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/curated_visualizations"
    one = many + "/{visualization_id:uuid_param}"
    tags = ["curated_visualizations"]
    return [
        api_route(
            many,
            create,
            method="POST",
            summary="Create Curated Visualization",
            tags=tags,
            body=CuratedVisualizationRequest,
            response=CuratedVisualizationResponse,
            errors=(403, 404, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Curated Visualization",
            tags=tags,
            query=HydrateQuery,
            response=CuratedVisualizationResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Curated Visualization",
            tags=tags,
            body=CuratedVisualizationUpdate,
            response=CuratedVisualizationResponse,
            errors=(404, 409),
        ),
        api_route(
            one,
            delete,
            method="DELETE",
            summary="Delete Curated Visualization",
            tags=tags,
            errors=(404,),
        ),
    ]
