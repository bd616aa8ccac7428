"""API key requests and ``APIKeyResponse``, in the reference's shapes. The ``ZENKEY_``
encoding is :class:`shared.auth.EncodedKey`: every service reads keys."""

from __future__ import annotations

import uuid
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from identity.core.schemas import NAME_SCHEMA, valid_name
from identity.models import APIKey, User
from identity.service_account.schemas import (
    TEXT_MAX_LENGTH,
    ServiceAccountResponse,
    service_account_response,
)
from shared.envelope import NamedEnvelope
from shared.types import WireDatetime

# Ten years: any longer grace is no rotation at all (and would overflow a datetime).
MAX_RETAIN_PERIOD_MINUTES = 10 * 366 * 24 * 60


class APIKeyRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(max_length=255, json_schema_extra=NAME_SCHEMA)
    description: str | None = Field(default=None, max_length=TEXT_MAX_LENGTH)

    _name = field_validator("name")(valid_name)


class APIKeyUpdate(BaseModel):
    """Every field optional; unknown keys ignored."""

    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, max_length=255, json_schema_extra=NAME_SCHEMA)
    description: str | None = Field(default=None, max_length=TEXT_MAX_LENGTH)
    active: bool | None = None

    _name = field_validator("name")(valid_name)


class APIKeyRotateRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    # Below zero keeps no old key, as the reference reads it (stored as 0).
    retain_period_minutes: Annotated[
        int, Field(le=MAX_RETAIN_PERIOD_MINUTES), AfterValidator(lambda m: max(m, 0))
    ] = 0


class APIKeyResponseBody(BaseModel):
    created: WireDatetime
    updated: WireDatetime
    key: str | None = None
    active: bool = True
    service_account: ServiceAccountResponse


class APIKeyResponseMetadata(BaseModel):
    description: str = ""
    retain_period_minutes: int
    last_login: WireDatetime | None = None
    last_rotated: WireDatetime | None = None


class APIKeyResponseResources(BaseModel):
    pass


class APIKeyResponse(
    NamedEnvelope[APIKeyResponseBody, APIKeyResponseMetadata, APIKeyResponseResources]
):
    pass


class APIKeyListQuery(BaseModel):
    """``service_account`` is typed as the reference types it (a UUID, else 422), then set
    to the path's account as the reference's server sets it: the list holds that account's
    keys, whatever account is sent."""

    service_account: uuid.UUID | None = Field(
        default=None,
        description="The service account to scope this query to: the path's, whatever is sent.",
    )


class APIKeyQuery(BaseModel):
    hydrate: bool = True


def api_key_response(
    api_key: APIKey, account: User, *, hydrate: bool, key: str | None = None
) -> APIKeyResponse:
    """Render a key; ``key`` (the encoded secret) is only ever passed by create and rotate."""
    return APIKeyResponse(
        id=api_key.id,
        name=api_key.name,
        body=APIKeyResponseBody(
            created=api_key.created,
            updated=api_key.updated,
            key=key,
            active=api_key.active,
            service_account=service_account_response(account, hydrate=False, resources=False),
        ),
        metadata=APIKeyResponseMetadata(
            description=api_key.description,
            retain_period_minutes=api_key.retain_period,
            last_login=api_key.last_login,
            last_rotated=api_key.last_rotated,
        )
        if hydrate
        else None,
        resources=APIKeyResponseResources(),
    )
