"""``/artifacts``: named, tagged artifacts in a project."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.pagination import Page
from shared.routing import ApiRoute, api_route, parse_json, path_param
from tracking.artifact.repository import ARTIFACTS
from tracking.artifact.schemas import (
    ArtifactRequest,
    ArtifactResponse,
    ArtifactUpdate,
    artifact_response,
)
from tracking.artifact.service import ArtifactService
from tracking.core.auth import caller_id
from tracking.core.schemas import HydrateQuery
from tracking.core.scoped import (
    ScopedListQuery,
    create_handler,
    delete_handler,
    get_handler,
    list_handler,
    query_extras,
    render_one,
)

LIST_QUERY = ARTIFACTS.query_model(extra=query_extras(ScopedListQuery))


list_artifacts = list_handler(ArtifactService, ARTIFACTS, artifact_response)
create = create_handler(ArtifactService, ArtifactRequest, artifact_response)


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
