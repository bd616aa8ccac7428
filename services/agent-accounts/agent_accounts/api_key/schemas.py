from __future__ import annotations

import uuid

from pydantic import Field

from agent_accounts.core.schemas import Name, RequestModel, Timestamp, TimestampedResponse
from agent_accounts.models import ApiKey


class ApiKeyCreateRequest(RequestModel):
    name: Name


class ApiKeyUpdateRequest(RequestModel):
    active: bool


class ApiKeyRotateRequest(RequestModel):
    # Up to 30 days of overlap between the old and the new key.
    retain_period_minutes: int = Field(default=0, ge=0, le=30 * 24 * 60)


class ApiKeyResponse(TimestampedResponse):
    id: uuid.UUID
    name: str
    active: bool
    last_used: Timestamp | None
    last_rotated: Timestamp | None
    owner_id: uuid.UUID


class ApiKeyIssuedResponse(ApiKeyResponse):
    key: str


def api_key_response(key: ApiKey) -> ApiKeyResponse:
    return ApiKeyResponse(
        id=key.id,
        name=key.name,
        active=key.active,
        last_used=key.last_used,
        last_rotated=key.last_rotated,
        owner_id=key.owner_id,
        created=key.created,
        updated=key.updated,
    )


def issued_response(key: ApiKey, plaintext: str) -> ApiKeyIssuedResponse:
    return ApiKeyIssuedResponse(**api_key_response(key).model_dump(), key=plaintext)
