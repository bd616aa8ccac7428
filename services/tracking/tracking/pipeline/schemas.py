"""Pipelines and pipeline snapshots: the few fields deployments and runs refer to, in the
reference's shapes."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, Field

from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import NamedResponse, ProjectScopedBody, ScopedRequest
from tracking.tag.schemas import TagResponse


class PipelineRequest(ScopedRequest):
    name: str = Field(min_length=1, max_length=255)
    description: str | None = None


class PipelineResponseBody(ProjectScopedBody):
    pass


class PipelineResponseMetadata(BaseModel):
    description: str | None = None


class PipelineResponseResources(BaseModel):
    user: NestedUser | None = None
    tags: list[TagResponse] = Field(default_factory=list)


class PipelineResponse(
    NamedResponse[PipelineResponseBody, PipelineResponseMetadata, PipelineResponseResources]
):
    pass


PIPELINE = EnvelopeShape(PipelineResponse)


def pipeline_response(row: Any, hydrate: bool, user: NestedUser | None) -> dict[str, Any]:
    return PIPELINE(row, {"user": user, "tags": []}, hydrate=hydrate)


def nested_pipeline(row: Any) -> dict[str, Any]:
    """Body only, as nested in snapshots, runs and deployments."""
    return PIPELINE.envelope.of(row, body=PIPELINE.body.of(row), metadata=None, resources=None)


class PipelineSnapshotRequest(ScopedRequest):
    """The reference's request has many more fields (step configurations, specs …); they
    are accepted and not kept: runs and deployments need only these."""

    name: str | None = Field(default=None, max_length=255)
    description: str | None = None
    run_name_template: str = Field(max_length=255)
    pipeline_configuration: dict[str, Any] = Field(default_factory=dict)
    is_dynamic: bool = False
    stack: uuid.UUID
    pipeline: uuid.UUID


class PipelineSnapshotResponseBody(ProjectScopedBody):
    runnable: bool
    deployable: bool
    is_dynamic: bool
    pipeline_id: uuid.UUID | None = None


class PipelineSnapshotResponseMetadata(BaseModel):
    description: str | None = None
    run_name_template: str
    pipeline_configuration: dict[str, Any]
    client_version: str | None = None
    server_version: str | None = None


class PipelineSnapshotResponseResources(BaseModel):
    user: NestedUser | None = None
    pipeline: PipelineResponse
    tags: list[TagResponse] = Field(default_factory=list)


class PipelineSnapshotResponse(BaseModel):
    body: PipelineSnapshotResponseBody | None = None
    metadata: PipelineSnapshotResponseMetadata | None = None
    resources: PipelineSnapshotResponseResources | None = None
    id: uuid.UUID
    permission_denied: bool = False
    name: str | None = None


SNAPSHOT = EnvelopeShape(PipelineSnapshotResponse)


def nested_snapshot(row: Any) -> dict[str, Any]:
    return SNAPSHOT.envelope.of(row, body=SNAPSHOT.body.of(row), metadata=None, resources=None)


def snapshot_response(item: Any, hydrate: bool, user: NestedUser | None) -> dict[str, Any]:
    """``item``: a :class:`tracking.pipeline.service.Snapshot`."""
    resources: dict[str, Any] = {
        "user": user,
        "pipeline": nested_pipeline(item.pipeline),
        "tags": [],
    }
    return SNAPSHOT(item.snapshot, resources, hydrate=hydrate)
