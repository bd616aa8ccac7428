"""Webhook trigger request and response models (the reference's ``WebhookTrigger*``
shapes, plus the snapshot a trigger runs)."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.envelope import Envelope
from shared.types import WireDatetime
from shared.users import NestedUser

Concurrency = Literal["skip", "submit"]


class WebhookTriggerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user: uuid.UUID | None = None  # accepted and ignored: the caller's token decides
    project: uuid.UUID
    name: str = Field(min_length=1, max_length=255)
    type: Literal["webhook"] = "webhook"
    flavor: Literal["webhook"] = "webhook"
    webhook_id: str = Field(min_length=1, max_length=255, description="Webhook name or id")
    snapshot_id: uuid.UUID
    configuration: dict[str, Any] = Field(default_factory=dict)
    run_configuration: dict[str, Any] | None = None
    active: bool = True
    concurrency: Concurrency = "skip"


class WebhookTriggerUpdate(BaseModel):
    """What may change; the webhook may not (422)."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=255)
    active: bool | None = None
    concurrency: Concurrency | None = None
    configuration: dict[str, Any] | None = None
    snapshot_id: uuid.UUID | None = None
    run_configuration: dict[str, Any] | None = None


class WebhookTriggerResponseBody(BaseModel):
    name: str
    active: bool
    type: Literal["webhook"] = "webhook"
    concurrency: Concurrency
    created: WireDatetime
    updated: WireDatetime
    user_id: uuid.UUID | None = None
    project_id: uuid.UUID
    is_archived: bool
    flavor: Literal["webhook"] = "webhook"
    configuration: dict[str, Any]
    webhook_id: uuid.UUID | None = None
    snapshot_id: uuid.UUID
    run_configuration: dict[str, Any] | None = None


class WebhookTriggerResponseResources(BaseModel):
    user: NestedUser | None = None


class WebhookTriggerResponse(
    Envelope[WebhookTriggerResponseBody, dict[str, Any], WebhookTriggerResponseResources]
):
    pass


class TriggerListQuery(BaseModel):
    project: str | None = None
    scope_user: uuid.UUID | None = None


class HydrateQuery(BaseModel):
    hydrate: bool = True


class DeleteQuery(BaseModel):
    soft: bool = Field(default=True, description="Archive (default) instead of deleting")


class TriggerExecutionResponse(BaseModel):
    id: uuid.UUID
    event_id: uuid.UUID
    trigger_id: uuid.UUID | None
    webhook_id: uuid.UUID
    snapshot_id: uuid.UUID
    delivery_id: str
    event_type: str | None
    status: str
    run_id: uuid.UUID | None
    attempts: int
    error: str | None
    next_attempt_at: WireDatetime | None = None
    retried_at: WireDatetime | None = None
    created: WireDatetime
    updated: WireDatetime
