"""``/artifacts``: named, tagged artifacts in a project."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import read_list
from shared.pagination import Page
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
from tracking.core.schemas import HydrateQuery
from tracking.core.scoped import (
    ScopedListQuery,
    delete_handler,
    get_handler,
    query_extras,
    render_one,
    render_page,
)

LIST_QUERY = ARTIFACTS.query_model(extra=query_extras(ScopedListQuery))


async def list_artifacts(request: Request) -> Response:
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


async def update(request: Request) -> Response:
    user_id = caller_id(request)
    artifact_id = path_param(request, "artifact_id", uuid.UUID)
    body = await parse_json(request, ArtifactUpdate)
    async with transaction(request) as session:
        item = await ArtifactService(session).update(artifact_id, body, user_id)
    return await render_one(request, item, artifact_response, hydrate=True)


get = get_handler(ArtifactService, "artifact_id", artifact_response)
delete = delete_handler(ArtifactService, "artifact_id")


def routes() -> list[ApiRoute]:
    one = "/api/v1/artifacts/{artifact_id}"
    tags = ["artifacts"]
    return [
        api_route(
            "/api/v1/artifacts",
            list_artifacts,
            method="GET",
            summary="List Artifacts",
            tags=tags,
            query=LIST_QUERY,
            response=Page[ArtifactResponse],
            errors=(400, 404),
        ),
        api_route(
            "/api/v1/artifacts",
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
            one,
            update,
            method="PUT",
            summary="Update Artifact",
            tags=tags,
            body=ArtifactUpdate,
            response=ArtifactResponse,
            errors=(400, 404, 409),
        ),
        api_route(
            one, delete, method="DELETE", summary="Delete Artifact", tags=tags, errors=(404,)
        ),
    ]
