"""Steps in the reference's shapes: what a step is created and changed with, how it
renders, and what the step page and a running step read of it."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from shared.envelope import NamedEnvelope
from shared.errors import BadRequest
from shared.types import WireDatetime
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import InputDatetime, ProjectScopedBody, ScopedRequest
from tracking.logs.schemas import LogsRequest, LogsResponse, nested_logs
from tracking.pipeline_run.schemas import (
    ExceptionInfo,
    ExecutionStatus,
    as_datetime,
    substitutions,
)


class StepHeartbeatResponse(BaseModel):
    """``latest_heartbeat`` carries its zone (``Z``), as the reference's does: unlike the
    times it reads back from its database, it sends the time it just took."""

    id: uuid.UUID
    status: ExecutionStatus
    latest_heartbeat: dt.datetime
    pipeline_run_status: ExecutionStatus | None = None
    heartbeat_enabled: bool


ArtifactLinks = dict[str, list[uuid.UUID]]


class DynamicStepConfig(BaseModel):
    """A dynamic step's compiled ``Step``: its spec and configuration (and overrides),
    kept as sent."""

    model_config = ConfigDict(extra="allow")

    spec: dict[str, Any]
    config: dict[str, Any]


class StepRunRequest(ScopedRequest):
    """A resource requester is accepted and not kept. A step of a dynamic pipeline comes
    with its configuration (``dynamic_config``: its spec and configuration, compiled as
    the pipeline runs); a static pipeline's step has its snapshot's."""

    name: str = Field(max_length=255)
    start_time: InputDatetime
    end_time: InputDatetime | None = None
    status: ExecutionStatus
    cache_key: str | None = Field(default=None, max_length=255)
    cache_expires_at: InputDatetime | None = None
    code_hash: str | None = Field(default=None, max_length=255)
    docstring: str | None = None
    source_code: str | None = None
    pipeline_run_id: uuid.UUID
    original_step_run_id: uuid.UUID | None = None
    parent_step_ids: list[uuid.UUID] = Field(default_factory=list)
    inputs: dict[str, uuid.UUID | list[uuid.UUID]] = Field(default_factory=dict)
    outputs: dict[str, uuid.UUID | list[uuid.UUID]] = Field(default_factory=dict)
    logs: uuid.UUID | LogsRequest | None = None
    exception_info: ExceptionInfo | None = None
    dynamic_config: DynamicStepConfig | None = None

    def links(self, direction: str) -> ArtifactLinks:
        return as_links(self.inputs if direction == "input" else self.outputs)


def as_links(given: dict[str, uuid.UUID | list[uuid.UUID]]) -> ArtifactLinks:
    return {name: value if isinstance(value, list) else [value] for name, value in given.items()}


class StepRunUpdate(BaseModel):
    """``loaded_artifact_versions`` (what the step loaded by name) is accepted and not
    kept."""

    model_config = ConfigDict(extra="ignore")

    outputs: dict[str, uuid.UUID | list[uuid.UUID]] = Field(default_factory=dict)
    status: ExecutionStatus | None = None
    end_time: InputDatetime | None = None
    exception_info: ExceptionInfo | None = None
    cache_expires_at: InputDatetime | None = None
    add_logs: list[LogsRequest] | None = None


class StepLogsQuery(BaseModel):
    """``GET /steps/{id}/logs`` and ``GET /runs/{id}/logs``: the logs of one source
    (``step``, ``orchestrator`` …) or of one id, exactly one of them."""

    source: str | None = None
    logs_id: uuid.UUID | None = None

    def check(self) -> None:
        if (self.source is None) == (self.logs_id is None):
            raise BadRequest(
                "Either source or logs_id must be provided."
                if self.source is None
                else "Only one of source or logs_id must be provided."
            )


STEP_VERSION = 1
"""Every step's ``version``: a run keeps one row per step name, never a second try."""


class StepRunResponseBody(ProjectScopedBody):
    type: str | None = None
    status: ExecutionStatus
    version: int = STEP_VERSION
    is_retriable: bool = False
    start_time: WireDatetime | None = None
    end_time: WireDatetime | None = None
    latest_heartbeat: WireDatetime | None = None
    model_version_id: uuid.UUID | None = None
    substitutions: dict[str, str] = Field(default_factory=dict)
    heartbeat_threshold: int | None = None


class StepRunResponseMetadata(BaseModel):
    config: dict[str, Any] = Field(default_factory=dict)
    spec: dict[str, Any] = Field(default_factory=dict)
    cache_key: str | None = None
    cache_expires_at: WireDatetime | None = None
    code_hash: str | None = None
    docstring: str | None = None
    source_code: str | None = None
    exception_info: ExceptionInfo | None = None
    snapshot_id: uuid.UUID | None = None
    pipeline_run_id: uuid.UUID
    original_step_run_id: uuid.UUID | None = None
    parent_step_ids: list[uuid.UUID] = Field(default_factory=list)
    run_metadata: dict[str, Any] = Field(default_factory=dict)


class StepRunResponseResources(BaseModel):
    user: NestedUser | None = None
    log_collection: list[LogsResponse] | None = None
    model_version: dict[str, Any] | None = None
    inputs: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    outputs: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    resource_request: dict[str, Any] | None = None


class StepRunResponse(
    NamedEnvelope[StepRunResponseBody, StepRunResponseMetadata, StepRunResponseResources]
):
    pass


class StepItem(NamedTuple):
    step: Any
    snapshot: Any | None
    run_start: Any
    inputs: dict[str, list[dict[str, Any]]]
    outputs: dict[str, list[dict[str, Any]]]
    logs: list[Any] = []
    run_metadata: dict[str, Any] | None = None
    model_version: dict[str, Any] | None = None

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.step.user_id  # type: ignore[no-any-return]


STEP = EnvelopeShape(StepRunResponse)


def step_configuration(step: Any, snapshot: Any | None) -> dict[str, Any]:
    """A step's spec and configuration: those it ran with in a dynamic pipeline, else its
    snapshot's (by the step's name, its invocation id)."""
    if step.dynamic_config:
        return step.dynamic_config  # type: ignore[no-any-return]
    found = (snapshot.step_configurations or {}).get(step.name) if snapshot else None
    return found if isinstance(found, dict) else {}


def step_spec(step: Any, snapshot: Any | None) -> dict[str, Any]:
    spec = step_configuration(step, snapshot).get("spec")
    return spec if isinstance(spec, dict) else {}


def heartbeat_threshold(step: Any, snapshot: Any | None, run_watched: bool) -> int | None:
    """The step's ``heartbeat_healthy_threshold`` (minutes) when its heartbeats are
    watched (its spec's ``enable_heartbeat`` and its run's), else None: as the reference
    sets it at the step's creation."""
    found = step_configuration(step, snapshot)
    spec, config = found.get("spec") or {}, found.get("config") or {}
    threshold = config.get("heartbeat_healthy_threshold")
    if not (run_watched and spec.get("enable_heartbeat")) or isinstance(threshold, bool):
        return None
    return threshold if isinstance(threshold, int) else None


def _filled(item: StepItem) -> dict[str, str]:
    snapshot = item.snapshot
    return substitutions(snapshot, as_datetime(item.run_start)) if snapshot else {}


def step_config(item: StepItem) -> dict[str, Any]:
    """The step's configuration, substitutions filled in from its run's start."""
    configured = step_configuration(item.step, item.snapshot).get("config")
    config = dict(configured) if isinstance(configured, dict) else {"name": item.step.name}
    config["substitutions"] = _filled(item)
    return config


def step_response(item: StepItem, hydrate: bool, user: NestedUser | None) -> dict[str, Any]:
    """The step's configuration and spec are its snapshot's (by the step's name, its
    invocation id), substitutions filled in from its run's start."""
    step, snapshot = item.step, item.snapshot
    resources = {
        "user": user,
        "log_collection": [nested_logs(logs) for logs in item.logs],
        "model_version": item.model_version,
        "inputs": item.inputs,
        "outputs": item.outputs,
    }
    filled = _filled(item)
    metadata: dict[str, Any] = {}
    if hydrate:
        metadata = {
            "config": step_config(item),
            "spec": step_spec(step, snapshot),
            "snapshot_id": snapshot.id if snapshot is not None else None,
            "run_metadata": item.run_metadata or {},
        }
    body = {"substitutions": filled}
    return STEP(step, resources, hydrate=hydrate, body=body, metadata=metadata)
