from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, Field

from agent_accounts.core.schemas import RequestModel, TimestampedResponse
from agent_accounts.models import AgentSession, Blob, Task
from agent_accounts.worker.schemas import TaskKind
from shared.types import WireDatetime


class TaskCreateRequest(RequestModel):
    kind: TaskKind
    timeout_seconds: int = Field(ge=1)
    session_ids: list[uuid.UUID] = Field(default_factory=list, max_length=1000)
    blob_ids: list[uuid.UUID] = Field(default_factory=list, max_length=1000)


class TaskClaimRequest(RequestModel):
    max_tasks: int = Field(default=1, ge=1, le=100)


class TaskResponse(TimestampedResponse):
    id: uuid.UUID
    owner_id: uuid.UUID
    kind: str
    status: str
    attempt: int
    timeout_seconds: int
    worker_id: uuid.UUID | None
    claimed_at: WireDatetime | None
    session_ids: list[uuid.UUID]
    blob_ids: list[uuid.UUID]


class TaskSpecResponse(BaseModel):
    task_id: uuid.UUID
    kind: str
    timeout_seconds: int


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


class SessionResponse(TimestampedResponse):
    id: uuid.UUID
    owner_id: uuid.UUID
    name: str
    data: dict[str, Any]


class BlobResponse(TimestampedResponse):
    id: uuid.UUID
    owner_id: uuid.UUID
    sha256: str
    size: int


def task_response(task: Task) -> TaskResponse:
    return TaskResponse(
        id=task.id,
        owner_id=task.owner_id,
        kind=task.kind,
        status=task.status,
        attempt=task.attempt,
        timeout_seconds=task.timeout_seconds,
        worker_id=task.worker_id,
        claimed_at=task.claimed_at,
        session_ids=[uuid.UUID(s) for s in task.session_ids],
        blob_ids=[uuid.UUID(b) for b in task.blob_ids],
        created=task.created,
        updated=task.updated,
    )


def session_response(row: AgentSession) -> SessionResponse:
    return SessionResponse(
        id=row.id,
        owner_id=row.owner_id,
        name=row.name,
        data=row.data,
        created=row.created,
        updated=row.updated,
    )


def blob_response(blob: Blob) -> BlobResponse:
    return BlobResponse(
        id=blob.id,
        owner_id=blob.owner_id,
        sha256=blob.sha256,
        size=blob.size,
        created=blob.created,
        updated=blob.updated,
    )
