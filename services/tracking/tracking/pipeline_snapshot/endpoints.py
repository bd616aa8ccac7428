"""``/pipeline_snapshots``: a pipeline's code and configuration, frozen for runs and
deployments (the models and rules live with pipelines: :mod:`tracking.pipeline`)."""

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
from tracking.pipeline.schemas import (
    PipelineSnapshotRequest,
    PipelineSnapshotResponse,
    snapshot_response,
)
from tracking.pipeline.service import SnapshotService


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await parse_json(request, PipelineSnapshotRequest)
    async with transaction(request) as session:
        item = await SnapshotService(session).create(body, user_id)
    return await render_one(request, item, snapshot_response, hydrate=True)


async def get(request: Request) -> Response:
    caller_id(request)
    snapshot_id = path_param(request, "snapshot_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await SnapshotService(session).get(snapshot_id)
    return await render_one(request, item, snapshot_response, hydrate=query.hydrate)


async def delete(request: Request) -> Response:
    caller_id(request)
    snapshot_id = path_param(request, "snapshot_id", uuid.UUID)
    async with transaction(request) as session:
        await SnapshotService(session).delete(snapshot_id)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/pipeline_snapshots"
    one = many + "/{snapshot_id}"
    tags = ["pipeline_snapshots"]
    return [
        api_route(
            many,
            create,
            method="POST",
            summary="Create Snapshot",
            tags=tags,
            body=PipelineSnapshotRequest,
            response=PipelineSnapshotResponse,
            errors=(400, 404, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Snapshot",
            tags=tags,
            query=HydrateQuery,
            response=PipelineSnapshotResponse,
            errors=(404,),
        ),
        api_route(
            one, delete, method="DELETE", summary="Delete Snapshot", tags=tags, errors=(400, 404)
        ),
    ]
