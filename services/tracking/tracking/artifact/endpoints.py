"""``/artifacts``: named, tagged artifacts in a project."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
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
from tracking.core.scoped import (
    ResourceRoutes,
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


ARTIFACT = ResourceRoutes(
    path="/api/v1/artifacts",
    id_param="artifact_id",
    label="Artifact",
    plural="Artifacts",
    tag="artifacts",
    request=ArtifactRequest,
    response=ArtifactResponse,
    list_query=LIST_QUERY,
)


def routes() -> list[ApiRoute]:
    return [
        *ARTIFACT.routes(list_=list_artifacts, create=create, get=get, delete=delete),
        api_route(
            ARTIFACT.one,
            update,
            method="PUT",
            summary="Update Artifact",
            tags=[ARTIFACT.tag],
            body=ArtifactUpdate,
            response=ArtifactResponse,
            errors=(400, 404, 409),
        ),
    ]
