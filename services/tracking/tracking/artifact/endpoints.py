"""``/artifacts``: named, tagged artifacts in a project."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.artifact.repository import ARTIFACTS
from tracking.artifact.schemas import (
    ArtifactRequest,
    ArtifactResponse,
    ArtifactUpdate,
    artifact_response,
)
from tracking.artifact.service import ArtifactService
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery, ScopedListQuery

LIST_QUERY = ARTIFACTS.query_model(extra=query_extras(ScopedListQuery))


async def list_(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, ARTIFACTS)
    query = parse_query(request, ScopedListQuery)
    async with transaction(request) as session:
        total, items = await ArtifactService(session).list_page(listing, query)
    return await render_page(request, listing, total, items, artifact_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await parse_json(request, ArtifactRequest)
    async with transaction(request) as session:
        item = await ArtifactService(session).create(body, user_id)
    return await render_one(request, item, artifact_response, hydrate=True)


async def get(request: Request) -> Response:
    caller_id(request)
    artifact_id = path_param(request, "artifact_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await ArtifactService(session).get(artifact_id)
    return await render_one(request, item, artifact_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    user_id = caller_id(request)
    artifact_id = path_param(request, "artifact_id", uuid.UUID)
    body = await parse_json(request, ArtifactUpdate)
    async with transaction(request) as session:
        item = await ArtifactService(session).update(artifact_id, body, user_id)
    return await render_one(request, item, artifact_response, hydrate=True)


async def delete(request: Request) -> Response:
    caller_id(request)
    artifact_id = path_param(request, "artifact_id", uuid.UUID)
    async with transaction(request) as session:
        await ArtifactService(session).delete(artifact_id)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/artifacts"
    one = many + "/{artifact_id:uuid_param}"
    tags = ["artifacts"]
    return [
        api_route(
            many,
            list_,
            method="GET",
            summary="List Artifacts",
            tags=tags,
            query=LIST_QUERY,
            response=Page[ArtifactResponse],
            errors=(400, 404),
        ),
        api_route(
            many,
            create,
            method="POST",
            summary="Create Artifact",
            tags=tags,
            body=ArtifactRequest,
            response=ArtifactResponse,
            errors=(400, 404, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Artifact",
            tags=tags,
            query=HydrateQuery,
            response=ArtifactResponse,
            errors=(404,),
        ),
        api_route(
            one, delete, method="DELETE", summary="Delete Artifact", tags=tags, errors=(400, 404)
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Artifact",
            tags=tags,
            body=ArtifactUpdate,
            response=ArtifactResponse,
            errors=(400, 404, 409),
        ),
    ]
