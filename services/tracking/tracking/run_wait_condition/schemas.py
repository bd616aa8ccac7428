"""Wait condition request and response models in the reference's shapes."""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shared.envelope import NamedEnvelope
from shared.types import WireDatetime
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import InputDatetime, ProjectScopedBody, ScopedRequest
from tracking.pipeline_run.schemas import PipelineRunResponse, nested_run
from tracking.run_wait_condition.repository import ConditionItem


class RunWaitConditionType(StrEnum):
    EXTERNAL_INPUT = "external_input"


class RunWaitConditionStatus(StrEnum):
    PENDING = "pending"
    RESOLVED = "resolved"


class RunWaitConditionResolution(StrEnum):
    CONTINUE = "continue"
    ABORT = "abort"


class RunWaitConditionLeaseMode(StrEnum):
    REFRESH = "refresh"
    FINALIZE = "finalize"
    ABANDON = "abandon"


class RunWaitConditionRequest(ScopedRequest):
    run: uuid.UUID
    name: str = Field(max_length=255)
    type: RunWaitConditionType
    question: str | None = None
    data_schema: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class RunWaitConditionResolveRequest(BaseModel):
    """``user`` is accepted and ignored (the caller resolves)."""

    model_config = ConfigDict(extra="ignore")

    user: uuid.UUID | None = None
    resolution: RunWaitConditionResolution
    result: Any = None


class RunWaitConditionLeaseUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    poller_instance_id: str = Field(max_length=255)
    poller_lease_expires_at: InputDatetime
    mode: RunWaitConditionLeaseMode = RunWaitConditionLeaseMode.REFRESH


class RunWaitConditionResponseBody(ProjectScopedBody):
    type: RunWaitConditionType
    status: RunWaitConditionStatus
    last_polled_at: WireDatetime | None = None
    poller_instance_id: str | None = None
    poller_lease_expires_at: WireDatetime | None = None
    resolved_at: WireDatetime | None = None
    resolved_by_user_id: uuid.UUID | None = None


class RunWaitConditionResponseMetadata(BaseModel):
    question: str | None = None
    run_metadata: dict[str, Any] = Field(default_factory=dict)
    data_schema: dict[str, Any] | None = None
    resolution: RunWaitConditionResolution | None = None
    result: Any = None


class RunWaitConditionResponseResources(BaseModel):
    user: NestedUser | None = None
    run: PipelineRunResponse


class RunWaitConditionResponse(
    NamedEnvelope[
        RunWaitConditionResponseBody,
        RunWaitConditionResponseMetadata,
        RunWaitConditionResponseResources,
    ]
):
    pass


RUN_WAIT_CONDITION = EnvelopeShape(RunWaitConditionResponse)


def nested_wait_condition(row: Any) -> dict[str, Any]:
    """Body only, as a run's ``active_wait_condition``."""
    body = RUN_WAIT_CONDITION.body.of(row)
    return RUN_WAIT_CONDITION.envelope.of(row, body=body, metadata=None, resources=None)


def run_wait_condition_response(
    item: ConditionItem, hydrate: bool, user: NestedUser | None
) -> dict[str, Any]:
    """The run body only, as the reference nests it; the project is the run's."""
    resources = {"user": user, "run": nested_run(item.run)}
    metadata = {"run_metadata": item.run_metadata or {}}
    body = {"project_id": item.run.project_id}
    return RUN_WAIT_CONDITION(
        item.condition, resources, hydrate=hydrate, body=body, metadata=metadata
    )
