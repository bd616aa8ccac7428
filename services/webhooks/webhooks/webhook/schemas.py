"""Webhook request and response models in the reference's shapes."""

from __future__ import annotations

import datetime as dt
import uuid

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from shared.envelope import NamedEnvelope
from shared.types import WireDatetime
from shared.users import NestedUser


class WebhookRequest(BaseModel):
    """``user`` is accepted and ignored (the caller's token decides)."""

    model_config = ConfigDict(extra="ignore")

    user: uuid.UUID | None = None
    project: uuid.UUID
    name: str = Field(min_length=1, max_length=255)
    webhook_type: str = Field(min_length=1, max_length=32)
    active: bool = True
    secret: SecretStr | None = Field(default=None, min_length=1, max_length=1024)


class WebhookUpdate(BaseModel):
    """Only the name and the active flag change; anything else is refused (422)."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=255)
    active: bool | None = None


class WebhookRotateSecretRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    secret: SecretStr | None = Field(default=None, min_length=1, max_length=1024)


class WebhookSecretResponse(BaseModel):
    secret: str


class WebhookStats(BaseModel):
    received_count: int = 0
    accepted_count: int = 0
    auth_failed_count: int = 0
    invalid_payload_count: int = 0
    last_received_at: WireDatetime | None = None
    last_accepted_at: WireDatetime | None = None
    last_error_at: WireDatetime | None = None
    last_error_summary: str | None = None

    @classmethod
    def from_redis(cls, values: dict[bytes, bytes]) -> WebhookStats:
        """Counters and microsecond timestamps as :mod:`webhooks.core.live` keeps them."""
        fields = {k.decode(): v.decode() for k, v in values.items()}
        data: dict[str, object] = {}
        for name, value in fields.items():
            if name.endswith("_count"):
                data[name] = int(value)
            elif name.endswith("_at"):
                data[name] = dt.datetime.fromtimestamp(int(value) / 1_000_000, dt.UTC)
            elif name == "last_error_summary":
                data[name] = value
        return cls.model_validate(data)


class WebhookResponseBody(BaseModel):
    created: WireDatetime
    updated: WireDatetime
    user_id: uuid.UUID | None = None
    project_id: uuid.UUID
    webhook_type: str
    active: bool
    endpoint_url: str | None = None


class WebhookResponseMetadata(BaseModel):
    stats: WebhookStats


class WebhookResponseResources(BaseModel):
    user: NestedUser | None = None


class WebhookResponse(
    NamedEnvelope[WebhookResponseBody, WebhookResponseMetadata, WebhookResponseResources]
):
    pass


class WebhookCreateResponse(WebhookResponse):
    """The one answer that carries the secret: the generated one, or ``null`` when the
    caller chose it."""

    secret: str | None = None


class WebhookListQuery(BaseModel):
    """Scoping parameters of the list (filters are declared on the list spec)."""

    project: str | None = None
    scope_user: uuid.UUID | None = None


class WebhookLookupQuery(BaseModel):
    """Where a name is looked up (ids and id prefixes are unique everywhere)."""

    project: str | None = None
    hydrate: bool = True


class RawEventQuery(BaseModel):
    delivery_id: str = Field(min_length=1, max_length=255)
    project: str | None = None


class RawEventResponse(BaseModel):
    body: dict[str, object] | list[object] | str | int | float | bool | None
