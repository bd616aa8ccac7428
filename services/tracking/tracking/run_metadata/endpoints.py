"""``/run-metadata`` (and the deprecated ``/workspaces/{project}/run-metadata``)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.responses import render_null
from shared.routing import ApiRoute, api_route, parse_json
from tracking.core.aliases import workspace_project
from tracking.core.auth import caller_id
from tracking.run_metadata.schemas import RunMetadataRequest
from tracking.run_metadata.service import RunMetadataService


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    project = workspace_project(request)
    body = await parse_json(request, RunMetadataRequest)
    async with transaction(request) as session:
        await RunMetadataService(session).create(body, user_id, project)
    return render_null()


def routes() -> list[ApiRoute]:
    return [
        api_route(
            "/api/v1/run-metadata",
            create,
            method="POST",
            summary="Create Run Metadata",
            tags=["run_metadata"],
            body=RunMetadataRequest,
            errors=(404,),
        )
    ]
