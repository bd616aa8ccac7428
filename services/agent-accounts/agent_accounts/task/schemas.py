from __future__ import annotations

import re
import uuid
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, JsonValue, field_validator, model_validator

from agent_accounts.core.listing import ListQuery
from agent_accounts.core.schemas import RequestModel, Timestamp, TimestampedResponse
from agent_accounts.models import AgentSession, Blob, Task
from agent_accounts.worker.schemas import TaskKind

# What the worker sets in a task process's environment; a creator may not shadow it.
CONTRACT_ENV_NAMES = frozenset({"SERVICE_API_URL", "SERVICE_API_KEY", "SERVICE_API_TOKEN"})
CONTRACT_ENV_PREFIX = "SERVICE_TASK_"
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class TaskStatus(StrEnum):
    PENDING = "pending"
    CLAIMED = "claimed"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELED = "canceled"


class TaskOnFailure(StrEnum):
    """What a task's hard failure does to the rest of its job (kitaru's values)."""

    ABORT = "abort"
    CONTINUE = "continue"
    IGNORE = "ignore"


class TaskRun(RequestModel):
    """An agent task's command: a shell command line, run by the worker that claims it."""

    command: str = Field(min_length=1, max_length=65536)
    working_dir: str | None = Field(default=None, min_length=1, max_length=4096)
    env: dict[str, str] = Field(default_factory=dict, max_length=256)

    @field_validator("env")
    @classmethod
    def _not_the_contract(cls, env: dict[str, str]) -> dict[str, str]:
        for name in env:
            if not re.fullmatch(ENV_NAME, name) or len(name) > 255:
                raise ValueError(f"{name!r} is not an environment variable name")
            if name.upper() in CONTRACT_ENV_NAMES or name.upper().startswith(CONTRACT_ENV_PREFIX):
                raise ValueError(f"{name} is set by the worker and cannot be given")
        return env


class TaskCreateRequest(RequestModel):
    kind: TaskKind
    timeout_seconds: int = Field(ge=1)
    session_ids: list[uuid.UUID] = Field(default_factory=list, max_length=1000)
    blob_ids: list[uuid.UUID] = Field(default_factory=list, max_length=1000)
    run: TaskRun | None = None

    @model_validator(mode="after")
    def _run_for_agents(self) -> TaskCreateRequest:
        if (self.kind == TaskKind.AGENT) != (self.run is not None):
            raise ValueError("an agent task needs run.command, and only agent tasks take one")
        return self


class TaskUpdateRequest(RequestModel):
    """A transition reported by the holder of the task's current attempt."""

    status: TaskStatus
    error: str | None = Field(default=None, max_length=65536)
    result: JsonValue = None


class TaskClaimRequest(RequestModel):
    max_tasks: int = Field(default=1, ge=1, le=100)


class TaskResponse(TimestampedResponse):
    """A task, with the fields kitaru's task model requires (its UI's worker page reads
    ``job_id`` of every task the worker claimed). This server holds no jobs: a task
    queued with ``POST /api/v1/tasks`` is a job of its own, so ``job_id`` is the task's
    id, ``on_failure`` kitaru's default and ``labels`` empty (it matches no selector)."""

    id: uuid.UUID
    job_id: uuid.UUID
    owner_id: uuid.UUID
    kind: str
    status: str
    on_failure: TaskOnFailure = TaskOnFailure.ABORT
    attempt: int
    labels: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: int
    worker_id: uuid.UUID | None
    claimed_at: Timestamp | None
    started_at: Timestamp | None
    ended_at: Timestamp | None
    session_ids: list[uuid.UUID]
    blob_ids: list[uuid.UUID]
    error: str | None
    result: JsonValue


class TaskRunSpec(BaseModel):
    command: str
    working_dir: str | None
    env: dict[str, str]


class TaskSpecResponse(BaseModel):
    task_id: uuid.UUID
    kind: str
    timeout_seconds: int
    run: TaskRunSpec | None


class TaskWithSpec(BaseModel):
    task: TaskResponse
    spec: TaskSpecResponse
    token: str


class TaskClaimResponse(BaseModel):
    tasks: list[TaskWithSpec]


class SessionCreateRequest(RequestModel):
    name: str = Field(min_length=1, max_length=255)
    data: dict[str, Any] = Field(default_factory=dict)


class SessionUpdateRequest(RequestModel):
    data: dict[str, Any]


class SessionListQuery(ListQuery):
    """``include_payloads=true`` lists each session with its ``data``, as kitaru lists
    sessions with their inputs and outputs."""

    include_payloads: bool = False


class SessionSummary(TimestampedResponse):
    id: uuid.UUID
    owner_id: uuid.UUID
    name: str
    task_id: uuid.UUID | None
    """The task whose token recorded the session."""


class SessionResponse(SessionSummary):
    data: dict[str, Any]


class BlobResponse(TimestampedResponse):
    id: uuid.UUID
    owner_id: uuid.UUID
    sha256: str
    size: int


def task_response(task: Task) -> TaskResponse:
    return TaskResponse(
        id=task.id,
        job_id=task.id,
        owner_id=task.owner_id,
        kind=task.kind,
        status=task.status,
        attempt=task.attempt,
        timeout_seconds=task.timeout_seconds,
        worker_id=task.worker_id,
        claimed_at=task.claimed_at,
        started_at=task.started_at,
        ended_at=task.ended_at,
        session_ids=[uuid.UUID(s) for s in task.session_ids],
        blob_ids=[uuid.UUID(b) for b in task.blob_ids],
        error=task.error,
        result=task.result,
        created=task.created,
        updated=task.updated,
    )


def task_spec(task: Task) -> TaskSpecResponse:
    return TaskSpecResponse(
        task_id=task.id,
        kind=task.kind,
        timeout_seconds=task.timeout_seconds,
        run=TaskRunSpec.model_validate(task.run) if task.run is not None else None,
    )


def session_summary(row: AgentSession) -> SessionSummary:
    return SessionSummary(
        id=row.id,
        owner_id=row.owner_id,
        name=row.name,
        task_id=row.produced_by_task_id,
        created=row.created,
        updated=row.updated,
    )


def session_response(row: AgentSession) -> SessionResponse:
    return SessionResponse(**dict(session_summary(row)), data=row.data)


def blob_response(blob: Blob) -> BlobResponse:
    return BlobResponse(
        id=blob.id,
        owner_id=blob.owner_id,
        sha256=blob.sha256,
        size=blob.size,
        created=blob.created,
        updated=blob.updated,
    )
