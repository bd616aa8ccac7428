"""``/pipelines`` and ``/pipeline_snapshots``: what runs and deployments refer to."""

from __future__ import annotations

from shared.routing import ApiRoute
from tracking.core.scoped import (
    ResourceRoutes,
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


PIPELINE = ResourceRoutes(
    path="/api/v1/pipelines",
    id_param="pipeline_id",
    label="Pipeline",
    plural="Pipelines",
    tag="pipelines",
    request=PipelineRequest,
    response=PipelineResponse,
    list_query=LIST_QUERY,
)
SNAPSHOT = ResourceRoutes(
    path="/api/v1/pipeline_snapshots",
    id_param="snapshot_id",
    label="Snapshot",
    plural="Snapshots",
    tag="pipeline_snapshots",
    request=PipelineSnapshotRequest,
    response=PipelineSnapshotResponse,
    list_query=LIST_QUERY,
)


def routes() -> list[ApiRoute]:
    return [
        *PIPELINE.routes(list_=list_pipelines, create=create, get=get, delete=delete),
        *SNAPSHOT.routes(create=create_snapshot, get=get_snapshot, delete=delete_snapshot),
    ]
