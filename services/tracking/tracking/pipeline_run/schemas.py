"""Pipeline runs and step runs: the minimal part of the reference's shapes that artifact
lineage, pruning and workload tokens need."""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from shared.types import WireDatetime
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import InputDatetime, NamedResponse, ProjectScopedBody, ScopedRequest
from tracking.pipeline.schemas import (
    PipelineResponse,
    PipelineSnapshotResponse,
    nested_pipeline,
    nested_snapshot,
)
from tracking.tag.schemas import TagResponse


class ExecutionStatus(StrEnum):
    INITIALIZING = "initializing"
    PROVISIONING = "provisioning"
    QUEUED = "queued"
    RUNNING = "running"
    FAILED = "failed"
    COMPLETED = "completed"
    CACHED = "cached"
    SKIPPED = "skipped"
    RETRYING = "retrying"
    RETRIED = "retried"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"
    PAUSED = "paused"
    RESUMING = "resuming"
    STOPPED = "stopped"
    STOPPING = "stopping"


FINISHED = frozenset(
    {
        ExecutionStatus.FAILED,
        ExecutionStatus.COMPLETED,
        ExecutionStatus.CACHED,
        ExecutionStatus.SKIPPED,
        ExecutionStatus.RETRIED,
        ExecutionStatus.CANCELLED,
        ExecutionStatus.STOPPED,
    }
)
"""The statuses after which a run is no longer in progress."""


def in_progress(status: str) -> bool:
    return ExecutionStatus(status) not in FINISHED


class PipelineRunRequest(ScopedRequest):
    name: str = Field(min_length=1, max_length=255)
    snapshot: uuid.UUID
    status: ExecutionStatus
    status_reason: str | None = None
    orchestrator_run_id: str | None = Field(default=None, max_length=255)
    start_time: InputDatetime | None = None
    end_time: InputDatetime | None = None


class PipelineRunUpdate(BaseModel):
    """The part of the reference's ``PipelineRunUpdate`` that runs keep here; other keys
    (tags, logs, outputs, exception info) are accepted and ignored."""

    model_config = ConfigDict(extra="ignore")

    status: ExecutionStatus | None = None
    status_reason: str | None = Field(default=None, max_length=255)
    orchestrator_run_id: str | None = Field(default=None, max_length=255)


class WebhookTriggerExecutionInfo(BaseModel):
    """The webhook event behind a run (the reference's ``WebhookTriggerExecutionInfo``):
    ``event`` is the event as the trigger matched it (its curated form when there is one)."""

    webhook_id: uuid.UUID
    delivery_id: str = Field(min_length=1, max_length=255)
    event_type: str | None = Field(default=None, max_length=255)
    event: dict[str, Any] | None = None


class TriggerExecutionInfo(BaseModel):
    """What started a run (the reference's ``TriggerExecutionInfo``, 0.98.0's fields);
    ``webhook_upstream_event`` is keyed by webhook type."""

    upstream_run_id: uuid.UUID | None = None
    upstream_pipeline_ids: list[uuid.UUID] = Field(default_factory=list)
    webhook_upstream_event: dict[str, WebhookTriggerExecutionInfo] | None = None


class TriggerExecutionRequest(TriggerExecutionInfo):
    """The trigger execution asking for a snapshot run: at most one run per ``id``, so a
    retried request (the webhooks worker retries until tracking answers) gets the run the
    first one created."""

    id: uuid.UUID
    trigger_id: uuid.UUID | None = None

    def info(self) -> dict[str, Any]:
        """The :class:`TriggerExecutionInfo` part, as a run stores and renders it."""
        fields = set(TriggerExecutionInfo.model_fields)
        return self.model_dump(mode="json", include=fields)


class PipelineSnapshotRunRequest(BaseModel):
    """``POST /pipeline_snapshots/{id}/runs``. ``run_configuration`` is the reference's
    (accepted and not applied: no pipeline executes on this platform's servers);
    ``trigger_execution`` is set by a trigger (the webhooks service)."""

    run_configuration: dict[str, Any] | None = None
    trigger_execution: TriggerExecutionRequest | None = None


class PipelineRunResponseBody(ProjectScopedBody):
    status: ExecutionStatus
    in_progress: bool
    status_reason: str | None = None
    index: int
    pipeline_id: uuid.UUID | None = None
    child_key: str | None = None
    root_run_id: uuid.UUID | None = None


class PipelineRunResponseMetadata(BaseModel):
    run_metadata: dict[str, Any] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)
    start_time: WireDatetime | None = None
    end_time: WireDatetime | None = None
    client_environment: dict[str, Any] = Field(default_factory=dict)
    orchestrator_environment: dict[str, Any] = Field(default_factory=dict)
    orchestrator_run_id: str | None = None
    code_path: str | None = None
    template_id: uuid.UUID | None = None
    is_templatable: bool = False
    enable_heartbeat: bool = False
    trigger_execution_info: TriggerExecutionInfo | None = None


class PipelineRunResponseResources(BaseModel):
    user: NestedUser | None = None
    snapshot: PipelineSnapshotResponse | None = None
    pipeline: PipelineResponse | None = None
    tags: list[TagResponse] = Field(default_factory=list)
    visualizations: list[Any] = Field(default_factory=list)


class PipelineRunResponse(
    NamedResponse[
        PipelineRunResponseBody, PipelineRunResponseMetadata, PipelineRunResponseResources
    ]
):
    pass


class RunItem(NamedTuple):
    run: Any
    snapshot: Any | None
    pipeline: Any | None

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.run.user_id  # type: ignore[no-any-return]


RUN = EnvelopeShape(PipelineRunResponse)


def run_response(item: RunItem, hydrate: bool, user: NestedUser | None) -> dict[str, Any]:
    run = item.run
    resources: dict[str, Any] = {
        "user": user,
        "snapshot": nested_snapshot(item.snapshot) if item.snapshot is not None else None,
        "pipeline": nested_pipeline(item.pipeline) if item.pipeline is not None else None,
        "tags": [],
        "visualizations": [],
    }
    body = {"in_progress": in_progress(run.status), "root_run_id": run.id}
    config = {"name": item.pipeline.name} if item.pipeline is not None else {}
    return RUN(run, resources, hydrate=hydrate, body=body, metadata={"config": config})


ArtifactLinks = dict[str, list[uuid.UUID]]


class StepRunRequest(ScopedRequest):
    name: str = Field(min_length=1, max_length=255)
    start_time: InputDatetime
    end_time: InputDatetime | None = None
    status: ExecutionStatus
    pipeline_run_id: uuid.UUID
    inputs: dict[str, uuid.UUID | list[uuid.UUID]] = Field(default_factory=dict)
    outputs: dict[str, uuid.UUID | list[uuid.UUID]] = Field(default_factory=dict)

    def links(self, direction: str) -> ArtifactLinks:
        given = self.inputs if direction == "input" else self.outputs
        return {
            name: value if isinstance(value, list) else [value] for name, value in given.items()
        }


class StepRunResponseBody(ProjectScopedBody):
    status: ExecutionStatus
    version: int = 1
    is_retriable: bool = False
    start_time: WireDatetime | None = None
    end_time: WireDatetime | None = None
    substitutions: dict[str, str] = Field(default_factory=dict)


class StepRunResponseMetadata(BaseModel):
    config: dict[str, Any] = Field(default_factory=dict)
    spec: dict[str, Any] = Field(default_factory=dict)
    snapshot_id: uuid.UUID | None = None
    pipeline_run_id: uuid.UUID
    parent_step_ids: list[uuid.UUID] = Field(default_factory=list)
    run_metadata: dict[str, Any] = Field(default_factory=dict)


class StepRunResponseResources(BaseModel):
    user: NestedUser | None = None
    inputs: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    outputs: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)


class StepRunResponse(
    NamedResponse[StepRunResponseBody, StepRunResponseMetadata, StepRunResponseResources]
):
    pass


class StepItem(NamedTuple):
    step: Any
    snapshot_id: uuid.UUID | None
    inputs: dict[str, list[dict[str, Any]]]
    outputs: dict[str, list[dict[str, Any]]]

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.step.user_id  # type: ignore[no-any-return]


STEP = EnvelopeShape(StepRunResponse)


def step_response(item: StepItem, hydrate: bool, user: NestedUser | None) -> dict[str, Any]:
    resources = {"user": user, "inputs": item.inputs, "outputs": item.outputs}
    metadata = {"config": {"name": item.step.name}, "snapshot_id": item.snapshot_id}
    return STEP(item.step, resources, hydrate=hydrate, metadata=metadata)
