from __future__ import annotations

import uuid
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from agent_accounts.core.schemas import Name, RequestModel, TimestampedResponse
from agent_accounts.models import Account
from shared.passwords import MIN_PASSWORD_LENGTH

# No 72-byte cap (argon2id hashes any length); the upper bound only limits hashing work.
Password = Annotated[str, StringConstraints(min_length=MIN_PASSWORD_LENGTH, max_length=4096)]
Email = Annotated[str, StringConstraints(max_length=255)]
Metadata = dict[str, Any]


class UserCreateRequest(RequestModel):
    name: Name
    email: Email | None = None
    password: Password | None = None
    is_admin: bool = False


class UserUpdateRequest(RequestModel):
    password: Password | None = None
    old_password: str | None = Field(default=None, max_length=4096)
    metadata: Metadata | None = None
    is_admin: bool | None = None


class UserActivateRequest(RequestModel):
    activation_token: str = Field(max_length=256)
    password: Password


class ServiceAccountCreateRequest(RequestModel):
    name: Name
    email: Email | None = None


class ServiceAccountUpdateRequest(RequestModel):
    metadata: Metadata | None = None
    active: bool | None = None


class AccountResponse(TimestampedResponse):
    id: uuid.UUID
    name: str
    email: str | None
    is_service_account: bool
    is_admin: bool
    active: bool
    metadata: Metadata


class UserActivationTokenResponse(AccountResponse):
    activation_token: str


def account_response(account: Account) -> AccountResponse:
    return AccountResponse(
        id=account.id,
        name=account.name,
        email=account.email,
        is_service_account=account.is_service_account,
        is_admin=account.is_admin,
        active=account.active,
        metadata=account.account_metadata,
        created=account.created,
        updated=account.updated,
    )


def with_activation_token(account: Account, token: str) -> UserActivationTokenResponse:
    return UserActivationTokenResponse(
        **account_response(account).model_dump(), activation_token=token
    )
