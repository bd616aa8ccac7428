"""User request and response models in the reference's shapes."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from identity.core.schemas import NAME_SCHEMA, valid_name
from identity.models import User
from shared.envelope import NamedEnvelope
from shared.types import WireDatetime

# The body is the same wherever a user appears: identity and every nested UserResponse.
from shared.users import UserResponse as NestedUserResponse
from shared.users import UserResponseBody


class UserRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(max_length=255, json_schema_extra=NAME_SCHEMA)
    full_name: str = Field(default="", max_length=255)
    is_admin: bool
    active: bool = False
    email: str | None = Field(default=None, max_length=255)
    email_opted_in: bool | None = None
    password: str | None = Field(default=None, max_length=255)
    external_user_id: uuid.UUID | None = None
    user_metadata: dict[str, Any] | None = None
    avatar_url: str | None = None

    _name = field_validator("name")(valid_name)


class UserUpdate(BaseModel):
    """Every field optional; unknown keys ignored (``activation_token`` is the one-time
    token when activating)."""

    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, max_length=255, json_schema_extra=NAME_SCHEMA)
    full_name: str | None = Field(default=None, max_length=255)
    is_admin: bool | None = None
    active: bool | None = None
    email: str | None = Field(default=None, max_length=255)
    email_opted_in: bool | None = None
    password: str | None = Field(default=None, max_length=255)
    old_password: str | None = Field(default=None, max_length=255)
    activation_token: str | None = Field(default=None, max_length=255)
    external_user_id: uuid.UUID | None = None
    user_metadata: dict[str, Any] | None = None
    avatar_url: str | None = None
    default_project_id: uuid.UUID | None = None

    _name = field_validator("name")(valid_name)


class UserResponseMetadata(BaseModel):
    password_changed_at: WireDatetime | None = None
    email: str | None = None
    external_user_id: uuid.UUID | None = None
    user_metadata: dict[str, Any] = Field(default_factory=dict)


class UserResponseResources(BaseModel):
    pass


class UserResponse(NamedEnvelope[UserResponseBody, UserResponseMetadata, UserResponseResources]):
    pass


class UserQuery(BaseModel):
    hydrate: bool = True


def _user_body(user: User, activation_token: str | None = None) -> UserResponseBody:
    return UserResponseBody(
        created=user.created,
        updated=user.updated,
        active=user.active,
        activation_token=activation_token,
        full_name=user.full_name,
        email_opted_in=user.email_opted_in,
        is_service_account=user.is_service_account,
        is_admin=user.is_admin,
        default_project_id=user.default_project_id,
        avatar_url=user.avatar_url,
    )


def nested_user(user: User) -> NestedUserResponse:
    """The body-only user of another entity's ``resources.user``."""
    return NestedUserResponse(id=user.id, name=user.name, body=_user_body(user))


def user_response(
    user: User, *, hydrate: bool, activation_token: str | None = None
) -> UserResponse:
    """Render a user; ``activation_token`` is only ever passed right after it is made."""
    return UserResponse(
        id=user.id,
        name=user.name,
        body=_user_body(user, activation_token),
        metadata=UserResponseMetadata(
            password_changed_at=user.password_changed_at,
            email=user.email,
            external_user_id=user.external_user_id,
            user_metadata=user.user_metadata,
        )
        if hydrate
        else None,
        resources=UserResponseResources(),
    )
