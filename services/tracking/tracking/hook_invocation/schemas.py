"""Hook invocation request and response models in the reference's shapes."""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from shared.db import new_id
from shared.envelope import Envelope
from shared.types import WireDatetime
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import InputDatetime, ProjectScopedBody, ScopedListQuery
from tracking.pipeline_run.schemas import ExecutionStatus


class HookType(StrEnum):
    RUN_START = "run_start"
    RUN_SUCCESS = "run_success"
    RUN_FAILURE = "run_failure"
    RUN_END = "run_end"
    RUN_PAUSE = "run_pause"
    RUN_RESUME = "run_resume"
    STEP_START = "step_start"
    STEP_END = "step_end"
    STEP_SUCCESS = "step_success"
    STEP_FAILURE = "step_failure"
    CUSTOM = "custom"


class ExceptionInfo(BaseModel):
    traceback: str
    source: str | None = None
    message: str | None = None
    user_code_line: int | None = None


class HookInvocationRequest(BaseModel):
    """``id`` is the client's (it names the invocation before the server has seen it);
    ``user`` is accepted and ignored (the caller's token decides)."""

    model_config = ConfigDict(extra="ignore")

    user: uuid.UUID | None = None
    project: uuid.UUID
    id: uuid.UUID = Field(default_factory=new_id)
    hook_type: HookType
    name: str | None = Field(default=None, max_length=255)
    status: ExecutionStatus
    start_time: InputDatetime
    end_time: InputDatetime | None = None
    source: str | None = None
    pipeline_run_id: uuid.UUID
    step_run_id: uuid.UUID | None = None
    outputs: dict[str, list[uuid.UUID]] = Field(default_factory=dict)
    exception_info: ExceptionInfo | None = None
    logs_id: uuid.UUID | None = None


class HookInvocationResponseBody(ProjectScopedBody):
    hook_type: HookType
    status: ExecutionStatus
    start_time: WireDatetime
    end_time: WireDatetime | None = None
    pipeline_run_id: uuid.UUID
    step_run_id: uuid.UUID | None = None


class HookInvocationResponseMetadata(BaseModel):
    source: str | None = None
    exception_info: ExceptionInfo | None = None


class HookInvocationResponseResources(BaseModel):
    user: NestedUser | None = None
    outputs: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    log_collection: list[dict[str, Any]] | None = None


class HookInvocationResponse(
    Envelope[
        HookInvocationResponseBody, HookInvocationResponseMetadata, HookInvocationResponseResources
    ]
):
    name: str | None = None


class HookInvocationListQuery(ScopedListQuery):
    pass


class HookInvocationItem(NamedTuple):
    """An invocation's row with its outputs (nested versions by name) and logs (nested)."""

    invocation: Any
    outputs: dict[str, list[dict[str, Any]]]
    logs: list[dict[str, Any]]

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.invocation.user_id  # type: ignore[no-any-return]


HOOK_INVOCATION = EnvelopeShape(HookInvocationResponse)


def hook_invocation_response(
    item: HookInvocationItem, hydrate: bool, user: NestedUser | None
) -> dict[str, Any]:
    resources = {"user": user, "outputs": item.outputs, "log_collection": item.logs}
    return HOOK_INVOCATION(item.invocation, resources, hydrate=hydrate)
