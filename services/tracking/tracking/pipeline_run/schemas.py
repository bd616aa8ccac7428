"""Pipeline runs and step runs in the reference's shapes: what a zenml client's run
records, and what the dashboard's run page reads of them (the DAG)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from shared.envelope import NamedEnvelope
from shared.types import WireDatetime
from shared.users import NestedUser
from tracking.artifact.schemas import TagName
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import (
    HydrateQuery,
    InputDatetime,
    ProjectScopedBody,
    ScopedRequest,
    WorkspaceListQuery,
)
from tracking.logs.schemas import LogsRequest, LogsResponse, nested_logs
from tracking.pipeline.schemas import PipelineResponse, nested_pipeline
from tracking.pipeline_snapshot.schemas import (
    PipelineSnapshotResponse,
    nested_snapshot,
    without_packages,
)
from tracking.stack.schemas import StackResponse, nested_stack
from tracking.tag.schemas import TagRef, TagResponse, TagRow, nested_tag


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


PLACEHOLDER = frozenset({ExecutionStatus.INITIALIZING, ExecutionStatus.PROVISIONING})
"""The statuses of a run the client announced and no orchestrator has taken yet."""


def derived_status(
    run_status: ExecutionStatus, steps: list[ExecutionStatus], step_count: int
) -> ExecutionStatus:
    """A static pipeline's run status from its steps', as the reference derives it: any
    failed step fails the run; a running step makes it run; all of its steps finished
    complete it. A run still announced (client-side cached steps) stays so."""
    if run_status == ExecutionStatus.STOPPING:
        return (
            ExecutionStatus.STOPPED
            if all(s in FINISHED for s in steps)
            else ExecutionStatus.STOPPING
        )
    if run_status == ExecutionStatus.FAILED or ExecutionStatus.FAILED in steps:
        return ExecutionStatus.FAILED
    if ExecutionStatus.STOPPED in steps:
        return (
            ExecutionStatus.STOPPED
            if all(s in FINISHED for s in steps)
            else ExecutionStatus.STOPPING
        )
    if ExecutionStatus.RUNNING in steps or ExecutionStatus.RETRYING in steps:
        return ExecutionStatus.RUNNING
    if len(steps) < step_count:
        return run_status if run_status in PLACEHOLDER else ExecutionStatus.RUNNING
    return ExecutionStatus.COMPLETED


class ExceptionInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    traceback: str
    step_code_line: int | None = None


def exception_info_json(info: ExceptionInfo | None) -> dict[str, Any] | None:
    return info.model_dump(mode="json") if info is not None else None


class PipelineRunRequest(ScopedRequest):
    """Trigger info, lineage (original and parent runs) and ``child_key`` are accepted
    and not kept. ``tags`` (the pipeline configuration's, as the client sends them) go
    on the run, made when new."""

    name: str = Field(max_length=255)
    snapshot: uuid.UUID
    status: ExecutionStatus
    status_reason: str | None = None
    orchestrator_run_id: str | None = Field(default=None, max_length=255)
    orchestrator_environment: dict[str, Any] = Field(default_factory=dict)
    start_time: InputDatetime | None = None
    end_time: InputDatetime | None = None
    logs: uuid.UUID | LogsRequest | None = None
    exception_info: ExceptionInfo | None = None
    tags: list[TagRef] | None = None


class PipelineRunUpdate(BaseModel):
    """The part of the reference's ``PipelineRunUpdate`` that runs keep here; other keys
    (outputs) are accepted and ignored."""

    model_config = ConfigDict(extra="ignore")

    status: ExecutionStatus | None = None
    status_reason: str | None = Field(default=None, max_length=255)
    orchestrator_run_id: str | None = Field(default=None, max_length=255)
    exception_info: ExceptionInfo | None = None
    add_logs: list[LogsRequest] | None = None
    add_tags: list[TagName] | None = None
    remove_tags: list[str] | None = None


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


class RunQuery(HydrateQuery):
    """``include_full_metadata``: a run's metadata with its steps' (``step::key``) and
    its schedule's (``schedule:key``), as the reference answers it."""

    include_full_metadata: bool = False


class RunListQuery(WorkspaceListQuery):
    include_full_metadata: bool = False


class StopQuery(BaseModel):
    """``graceful`` or not, the server stops a run the same way: it marks it stopping."""

    graceful: bool = False


class DagQuery(BaseModel):
    """``include_step_metadata``: the metadata keys whose values the step nodes show."""

    include_step_metadata: list[str] | None = None


class DagNode(BaseModel):
    node_id: str
    type: str
    id: uuid.UUID | None = None
    name: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class DagEdge(BaseModel):
    source: str
    target: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class PipelineRunDAG(BaseModel):
    id: uuid.UUID
    status: ExecutionStatus
    nodes: list[DagNode]
    edges: list[DagEdge]


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
    trigger_info: dict[str, Any] | None = None
    enable_heartbeat: bool = False
    exception_info: ExceptionInfo | None = None
    trigger_execution_info: TriggerExecutionInfo | None = None


class PipelineRunResponseResources(BaseModel):
    user: NestedUser | None = None
    snapshot: PipelineSnapshotResponse | None = None
    source_snapshot: PipelineSnapshotResponse | None = None
    stack: StackResponse | None = None
    pipeline: PipelineResponse | None = None
    build: dict[str, Any] | None = None
    schedule: dict[str, Any] | None = None
    code_reference: dict[str, Any] | None = None
    model_version: dict[str, Any] | None = None
    tags: list[TagResponse] = Field(default_factory=list)
    log_collection: list[LogsResponse] | None = None
    visualizations: list[Any] = Field(default_factory=list)
    trigger: dict[str, Any] | None = None
    original_run: dict[str, Any] | None = None
    parent_run: dict[str, Any] | None = None
    active_wait_condition: dict[str, Any] | None = None
    outputs: dict[str, Any] = Field(default_factory=dict)


class PipelineRunResponse(
    NamedEnvelope[
        PipelineRunResponseBody, PipelineRunResponseMetadata, PipelineRunResponseResources
    ]
):
    pass


class RunItem(NamedTuple):
    """A run's row with what it renders; ``run_metadata`` is read only to hydrate."""

    run: Any
    snapshot: Any | None
    pipeline: Any | None
    stack: Any | None = None
    logs: list[Any] = []
    tags: Sequence[TagRow] = ()
    run_metadata: dict[str, Any] | None = None
    model_version: dict[str, Any] | None = None
    """The run's model version, body only (as the reference nests it)."""
    active_wait_condition: dict[str, Any] | None = None
    """The run's pending wait condition, rendered body only."""

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.run.user_id  # type: ignore[no-any-return]


RUN = EnvelopeShape(PipelineRunResponse)


def nested_run(row: Any) -> dict[str, Any]:
    """Body only, as nested in wait conditions."""
    body = RUN.body.of(row, in_progress=in_progress(row.status))
    return RUN.envelope.of(row, body=body, metadata=None, resources=None)


def substitutions(snapshot: Any, start: dt.datetime | None) -> dict[str, str]:
    """What a run's names and configuration fill in: the snapshot's pipeline
    configuration's ``substitutions``, and ``date`` and ``time`` of the run's start
    unless those name them."""
    configured = (snapshot.pipeline_configuration or {}).get("substitutions")
    values = {str(k): str(v) for k, v in configured.items()} if isinstance(configured, dict) else {}
    if start is not None:
        values.setdefault("date", start.strftime("%Y_%m_%d"))
        values.setdefault("time", start.strftime("%H_%M_%S_%f"))
    return values


def run_config(snapshot: Any | None, pipeline: Any | None, start: Any) -> dict[str, Any]:
    """The run's pipeline configuration: its snapshot's, substitutions filled in."""
    if snapshot is None:
        return {"name": pipeline.name} if pipeline is not None else {}
    config = dict(snapshot.pipeline_configuration or {})
    config["substitutions"] = substitutions(snapshot, as_datetime(start))
    return config


def as_datetime(value: Any) -> dt.datetime | None:
    if value is None or isinstance(value, dt.datetime):
        return value
    return dt.datetime.fromisoformat(str(value))


def run_response(item: RunItem, hydrate: bool, user: NestedUser | None) -> dict[str, Any]:
    run, snapshot = item.run, item.snapshot
    resources: dict[str, Any] = {
        "user": user,
        "snapshot": nested_snapshot(snapshot) if snapshot is not None else None,
        "stack": nested_stack(item.stack) if item.stack is not None else None,
        "pipeline": nested_pipeline(item.pipeline) if item.pipeline is not None else None,
        "tags": [nested_tag(tag) for tag in item.tags],
        "log_collection": [nested_logs(logs) for logs in item.logs],
        "visualizations": [],
        "model_version": item.model_version,
        "active_wait_condition": item.active_wait_condition,
    }
    # ``root_run_id`` stays null: the reference sets it on child runs only, and runs here
    # have no parent runs (the client reads a set one as "a child run: resume its root").
    body = {"in_progress": in_progress(run.status)}
    metadata: dict[str, Any] = {}
    if hydrate:
        metadata = {
            "config": run_config(snapshot, item.pipeline, run.start_time),
            "client_environment": without_packages(
                snapshot.client_environment if snapshot is not None else None
            ),
            "orchestrator_environment": without_packages(run.orchestrator_environment),
            "code_path": snapshot.code_path if snapshot is not None else None,
            "template_id": snapshot.template_id if snapshot is not None else None,
            "is_templatable": bool(snapshot is not None and snapshot.templatable),
            "enable_heartbeat": run.enable_heartbeat,
            "run_metadata": item.run_metadata or {},
        }
    return RUN(run, resources, hydrate=hydrate, body=body, metadata=metadata)
