"""Service account requests and ``ServiceAccountResponse`` in the reference's shapes."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, ConfigDict, Field, field_validator

from identity.core.schemas import NAME_SCHEMA, valid_name
from identity.models import User
from shared.envelope import NamedEnvelope
from shared.types import WireDatetime

TEXT_MAX_LENGTH = 65535


class ServiceAccountRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(max_length=255, json_schema_extra=NAME_SCHEMA)
    full_name: str = Field(default="", max_length=255)
    description: str | None = Field(default=None, max_length=TEXT_MAX_LENGTH)
    active: bool
    avatar_url: str | None = None

    _name = field_validator("name")(valid_name)


class ServiceAccountUpdate(BaseModel):
    """Every field optional; unknown keys ignored."""

    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, max_length=255, json_schema_extra=NAME_SCHEMA)
    full_name: str | None = Field(default=None, max_length=255)
    description: str | None = Field(default=None, max_length=TEXT_MAX_LENGTH)
    active: bool | None = None
    avatar_url: str | None = None

    _name = field_validator("name")(valid_name)


class ServiceAccountResponseBody(BaseModel):
    created: WireDatetime
    updated: WireDatetime
    full_name: str = ""
    active: bool = False
    avatar_url: str | None = None


class ServiceAccountResponseMetadata(BaseModel):
    description: str = ""
    external_user_id: uuid.UUID | None = None


class ServiceAccountResponseResources(BaseModel):
    pass


class ServiceAccountResponse(
    NamedEnvelope[
        ServiceAccountResponseBody, ServiceAccountResponseMetadata, ServiceAccountResponseResources
    ]
):
    pass


class ServiceAccountQuery(BaseModel):
    hydrate: bool = True


def service_account_response(
    account: User, *, hydrate: bool, resources: bool = True
) -> ServiceAccountResponse:
    """Render a service account; an API key's nested one has no metadata nor resources."""
    return ServiceAccountResponse(
        id=account.id,
        name=account.name,
        body=ServiceAccountResponseBody(
            created=account.created,
            updated=account.updated,
            full_name=account.full_name,
            active=account.active,
            avatar_url=account.avatar_url,
        ),
        metadata=ServiceAccountResponseMetadata(
            description=account.description, external_user_id=account.external_user_id
        )
        if hydrate
        else None,
        resources=ServiceAccountResponseResources() if resources else None,
    )
