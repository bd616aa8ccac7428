"""``/pipelines`` and ``/pipeline_snapshots``: what runs and deployments refer to."""

from __future__ import annotations

from shared.pagination import Page
from shared.routing import ApiRoute, api_route
from tracking.core.schemas import HydrateQuery
from tracking.core.scoped import (
    ScopedListQuery,
    create_handler,
    delete_handler,
    get_handler,
    list_handler,
    query_extras,
)
from tracking.pipeline.repository import PIPELINES
from tracking.pipeline.schemas import (
    PipelineRequest,
    PipelineResponse,
    PipelineSnapshotRequest,
    PipelineSnapshotResponse,
    pipeline_response,
    snapshot_response,
)
from tracking.pipeline.service import PipelineService, SnapshotService

LIST_QUERY = PIPELINES.query_model(extra=query_extras(ScopedListQuery))


list_pipelines = list_handler(PipelineService, PIPELINES, pipeline_response)
create = create_handler(PipelineService, PipelineRequest, pipeline_response)
create_snapshot = create_handler(SnapshotService, PipelineSnapshotRequest, snapshot_response)
get = get_handler(PipelineService, "pipeline_id", pipeline_response)
delete = delete_handler(PipelineService, "pipeline_id")
get_snapshot = get_handler(SnapshotService, "snapshot_id", snapshot_response)
delete_snapshot = delete_handler(SnapshotService, "snapshot_id")


def routes() -> list[ApiRoute]:
    pipelines = "/api/v1/pipelines"
    snapshots = "/api/v1/pipeline_snapshots"
    return [
        api_route(
            pipelines,
            list_pipelines,
            method="GET",
            summary="List Pipelines",
            tags=["pipelines"],
            query=LIST_QUERY,
            response=Page[PipelineResponse],
            errors=(400, 404),
        ),
        api_route(
            pipelines,
            create,
            method="POST",
            summary="Create Pipeline",
            tags=["pipelines"],
            body=PipelineRequest,
            response=PipelineResponse,
            errors=(404, 409),
        ),
        api_route(
            f"{pipelines}/{{pipeline_id}}",
            get,
            method="GET",
            summary="Get Pipeline",
            tags=["pipelines"],
            query=HydrateQuery,
            response=PipelineResponse,
            errors=(404,),
        ),
        api_route(
            f"{pipelines}/{{pipeline_id}}",
            delete,
            method="DELETE",
            summary="Delete Pipeline",
            tags=["pipelines"],
            errors=(404,),
        ),
        api_route(
            snapshots,
            create_snapshot,
            method="POST",
            summary="Create Snapshot",
            tags=["pipeline_snapshots"],
            body=PipelineSnapshotRequest,
            response=PipelineSnapshotResponse,
            errors=(404,),
        ),
        api_route(
            f"{snapshots}/{{snapshot_id}}",
            get_snapshot,
            method="GET",
            summary="Get Snapshot",
            tags=["pipeline_snapshots"],
            query=HydrateQuery,
            response=PipelineSnapshotResponse,
            errors=(404,),
        ),
        api_route(
            f"{snapshots}/{{snapshot_id}}",
            delete_snapshot,
            method="DELETE",
            summary="Delete Snapshot",
            tags=["pipeline_snapshots"],
            errors=(404,),
        ),
    ]
