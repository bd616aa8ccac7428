"""Run template request and response models in the reference's shapes."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shared.envelope import NamedEnvelope
from shared.users import NestedUser
from tracking.artifact.schemas import TagName
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import ProjectScopedBody, ScopedRequest
from tracking.pipeline.schemas import PipelineResponse, nested_pipeline
from tracking.pipeline_build.schemas import PipelineBuildResponse, nested_build
from tracking.pipeline_run.schemas import ExecutionStatus
from tracking.pipeline_snapshot.schemas import PipelineSnapshotResponse, nested_snapshot
from tracking.run_template.repository import TemplateItem
from tracking.tag.schemas import TagResponse, nested_tag

TEXT_FIELD_MAX_LENGTH = 65535


class RunTemplateRequest(ScopedRequest):
    name: str = Field(max_length=255)
    description: str | None = Field(default=None, max_length=TEXT_FIELD_MAX_LENGTH)
    source_snapshot_id: uuid.UUID
    hidden: bool = False
    tags: list[TagName] | None = None


class RunTemplateUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, max_length=255)
    description: str | None = Field(default=None, max_length=TEXT_FIELD_MAX_LENGTH)
    hidden: bool | None = None
    add_tags: list[TagName] | None = None
    remove_tags: list[str] | None = None


class RunTemplateResponseBody(ProjectScopedBody):
    runnable: bool
    hidden: bool = False


class RunTemplateResponseMetadata(BaseModel):
    description: str | None = None
    pipeline_spec: dict[str, Any] | None = None
    config_template: dict[str, Any] | None = None
    config_schema: dict[str, Any] | None = None


class RunTemplateResponseResources(BaseModel):
    user: NestedUser | None = None
    source_snapshot: PipelineSnapshotResponse | None = None
    pipeline: PipelineResponse | None = None
    build: PipelineBuildResponse | None = None
    code_reference: dict[str, Any] | None = None
    tags: list[TagResponse]
    latest_run_id: uuid.UUID | None = None
    latest_run_status: ExecutionStatus | None = None


class RunTemplateResponse(
    NamedEnvelope[
        RunTemplateResponseBody, RunTemplateResponseMetadata, RunTemplateResponseResources
    ]
):
    pass


RUN_TEMPLATE = EnvelopeShape(RunTemplateResponse)


def run_template_response(
    item: TemplateItem, hydrate: bool, user: NestedUser | None
) -> dict[str, Any]:
    """The snapshot's pipeline spec (metadata); its pipeline, build and the snapshot itself
    body only (resources), as the reference nests them. This server keeps no code
    references, and builds no configuration template or schema (the reference builds them
    from its flavors' settings classes, for remote stacks only)."""
    snapshot, row = item.snapshot, item.template
    resources = {
        "user": user,
        "source_snapshot": nested_snapshot(snapshot) if snapshot is not None else None,
        "pipeline": nested_pipeline(item.pipeline) if item.pipeline is not None else None,
        "build": nested_build(item.build) if item.build is not None else None,
        "code_reference": None,
        "tags": [nested_tag(t) for t in item.tags],
        "latest_run_id": row.latest_run_id,
        "latest_run_status": row.latest_run_status,
    }
    metadata = {
        "pipeline_spec": snapshot.pipeline_spec if snapshot is not None else None,
        "config_template": None,
        "config_schema": None,
    }
    return RUN_TEMPLATE(row, resources, hydrate=hydrate, metadata=metadata)
