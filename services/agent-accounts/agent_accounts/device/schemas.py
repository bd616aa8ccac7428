from __future__ import annotations

import uuid
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from agent_accounts.core.schemas import RequestModel, Timestamp, TimestampedResponse
from agent_accounts.models import Device


class DeviceStatus(StrEnum):
    PENDING = "pending"
    VERIFIED = "verified"
    ACTIVE = "active"


class DeviceAuthorizationForm(BaseModel):
    """What the device reports about itself (all optional, as the reference's form)."""

    model_config = ConfigDict(extra="ignore")

    hostname: str | None = Field(default=None, max_length=255)
    os: str | None = Field(default=None, max_length=255)
    python_version: str | None = Field(default=None, max_length=255)
    client_version: str | None = Field(default=None, max_length=255)


class DeviceAuthorizationResponse(BaseModel):
    device_id: uuid.UUID
    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str
    expires_in: int
    interval: int


class DeviceVerifyRequest(RequestModel):
    user_code: str = Field(max_length=64)
    trusted: bool = False


class DeviceUpdateRequest(RequestModel):
    locked: bool | None = None
    trusted: bool | None = None


class DeviceGetQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    # Lets the approving account see a device nobody approved yet.
    user_code: str | None = Field(default=None, max_length=64)


class DeviceResponse(TimestampedResponse):
    id: uuid.UUID
    status: DeviceStatus
    locked: bool
    trusted: bool
    expires: Timestamp | None
    last_login: Timestamp | None
    hostname: str | None
    os: str | None
    ip_address: str | None
    python_version: str | None
    client_version: str | None


def device_response(device: Device) -> DeviceResponse:
    return DeviceResponse(
        id=device.id,
        status=DeviceStatus(device.status),
        locked=device.locked,
        trusted=device.trusted,
        expires=device.expires,
        last_login=device.last_login,
        hostname=device.hostname,
        os=device.os,
        ip_address=device.ip_address,
        python_version=device.python_version,
        client_version=device.client_version,
        created=device.created,
        updated=device.updated,
    )
