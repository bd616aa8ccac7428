"""Logs: where a run's, a step's or the client's logs were written, in the reference's
shapes (``LogsRequest``, ``LogsUpdate``, ``LogsResponse``)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.envelope import Envelope
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import ProjectScopedBody

# The reference's runner logs need no store; every other source names one.
RUNNER_SOURCE = "runner"
TEXT_FIELD_MAX_LENGTH = 65535


def _one_owner(run_id: uuid.UUID | None, step_id: uuid.UUID | None) -> None:
    if run_id is not None and step_id is not None:
        raise ValueError("Two different IDs can not be set at the same time.")


class LogsRequest(BaseModel):
    """``project`` may be left out (clients before 0.84 did): the step's or run's, else
    the default project's. ``user`` is accepted and ignored, as on every request."""

    model_config = ConfigDict(extra="ignore")

    id: uuid.UUID = Field(default_factory=uuid.uuid4)
    user: uuid.UUID | None = None
    project: uuid.UUID | None = None
    uri: str | None = Field(default=None, max_length=TEXT_FIELD_MAX_LENGTH - 1)
    source: str = Field(default="", max_length=255)
    artifact_store_id: uuid.UUID | None = None
    log_store_id: uuid.UUID | None = None
    pipeline_run_id: uuid.UUID | None = None
    step_run_id: uuid.UUID | None = None
    hook_invocation_id: uuid.UUID | None = None

    @model_validator(mode="after")
    def _check(self) -> LogsRequest:
        if (
            self.artifact_store_id is None
            and self.log_store_id is None
            and self.source != RUNNER_SOURCE
        ):
            raise ValueError("Either an `artifact_store_id` or a `log_store_id` must be set.")
        _one_owner(self.pipeline_run_id, self.step_run_id)
        return self


class LogsUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    pipeline_run_id: uuid.UUID | None = None
    step_run_id: uuid.UUID | None = None

    @model_validator(mode="after")
    def _check(self) -> LogsUpdate:
        _one_owner(self.pipeline_run_id, self.step_run_id)
        return self


class LogsResponseBody(ProjectScopedBody):
    uri: str | None = None
    source: str


class LogsResponseMetadata(BaseModel):
    step_run_id: uuid.UUID | None = None
    pipeline_run_id: uuid.UUID | None = None
    artifact_store_id: uuid.UUID | None = None
    log_store_id: uuid.UUID | None = None
    hook_invocation_id: uuid.UUID | None = None


class LogsResponseResources(BaseModel):
    user: NestedUser | None = None


class LogsResponse(Envelope[LogsResponseBody, LogsResponseMetadata, LogsResponseResources]):
    """No ``name``: logs are found through their run or step."""


LOGS = EnvelopeShape(LogsResponse)


def logs_response(row: Any, hydrate: bool, user: NestedUser | None) -> dict[str, Any]:
    return LOGS(row, {"user": user}, hydrate=hydrate)


def nested_logs(row: Any) -> dict[str, Any]:
    """Body only, as in a run's or a step's ``log_collection``."""
    return LOGS.envelope.of(row, body=LOGS.body.of(row), metadata=None, resources=None)
