from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, model_validator

from agent_accounts.core.listing import ListQuery
from agent_accounts.core.schemas import RequestModel, Timestamp, TimestampedResponse
from agent_accounts.models import Worker


class TaskKind(StrEnum):
    AGENT = "agent"
    EVALUATOR = "evaluator"
    IMPORTER = "importer"
    ANALYZER = "analyzer"


class WorkerClaim(RequestModel):
    kind: TaskKind
    agent_version_id: uuid.UUID | None = None


class LabelSelector(RequestModel):
    key: str = Field(max_length=255)
    values: list[str] = Field(max_length=100)
    required: bool = False


class WorkerScope(RequestModel):
    # Documented: claims unique (equal as JSON: an agent_version_id left out and a null one
    # are the same claim, the document cannot say), selectors non-empty.
    claims: list[WorkerClaim] = Field(
        min_length=1, max_length=16, json_schema_extra={"uniqueItems": True}
    )
    selectors: list[LabelSelector] | None = Field(default=None, json_schema_extra={"minItems": 1})
    job_id: uuid.UUID | None = None

    @model_validator(mode="after")
    def _unique(self) -> WorkerScope:
        entries = [(c.kind, c.agent_version_id) for c in self.claims]
        if len(set(entries)) != len(entries):
            raise ValueError("claims must be unique")
        if self.selectors is not None:
            keys = [s.key for s in self.selectors]
            if not keys or len(set(keys)) != len(keys):
                raise ValueError("selectors must be non-empty with unique keys")
        return self


class WorkerRuntime(RequestModel):
    platform: str = Field(max_length=64)
    hostname: str | None = Field(default=None, max_length=255)
    os: str | None = Field(default=None, max_length=255)
    arch: str | None = Field(default=None, max_length=64)
    python_version: str | None = Field(default=None, max_length=64)
    kitaru_version: str | None = Field(default=None, max_length=64)
    namespace: str | None = Field(default=None, max_length=255)
    pod: str | None = Field(default=None, max_length=255)


class WorkerCreateRequest(RequestModel):
    name: str = Field(min_length=1, max_length=255)
    scope: WorkerScope
    runtime: WorkerRuntime
    metadata: dict[str, str] = Field(default_factory=dict)


class WorkerListQuery(ListQuery):
    include_stale: bool = False


class WorkerHeartbeatRequest(RequestModel):
    task_ids: list[uuid.UUID] = Field(max_length=1000)


class WorkerHeartbeatResponse(BaseModel):
    cancel_task_ids: list[uuid.UUID]


class WorkerResponse(TimestampedResponse):
    id: uuid.UUID
    owner_id: uuid.UUID
    name: str
    scope: dict[str, Any]
    runtime: dict[str, Any]
    last_seen_at: Timestamp
    live: bool
    metadata: dict[str, Any]


class WorkerTokenResponse(BaseModel):
    token: str
    token_expires_at: Timestamp


class WorkerRegistrationResponse(WorkerTokenResponse):
    worker: WorkerResponse


def worker_response(worker: Worker, *, live: bool) -> WorkerResponse:
    return WorkerResponse(
        id=worker.id,
        owner_id=worker.owner_id,
        name=worker.name,
        scope=worker.scope,
        runtime=worker.runtime,
        last_seen_at=worker.last_seen_at,
        live=live,
        metadata=worker.worker_metadata,
        created=worker.created,
        updated=worker.updated,
    )
