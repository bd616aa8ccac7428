"""Device flow requests and ``OAuthDeviceResponse`` in the reference's shapes."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, ConfigDict, Field

from identity.models import DeviceStatus, OAuthDevice, User
from identity.user.schemas import nested_user
from shared.envelope import Envelope
from shared.types import WireDatetime
from shared.users import UserResponse


class DeviceAuthorizationForm(BaseModel):
    """``Body_device_authorization_api_v1_device_authorization_post``."""

    model_config = ConfigDict(extra="ignore")

    client_id: uuid.UUID


class OAuthDeviceAuthorizationResponse(BaseModel):
    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str | None = None
    expires_in: int
    interval: int


class OAuthDeviceVerificationRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    user_code: str = Field(max_length=255)
    trusted_device: bool = False


class OAuthDeviceUpdate(BaseModel):
    """Only ``locked`` can be changed; unknown keys are ignored."""

    model_config = ConfigDict(extra="ignore")

    locked: bool | None = None


class DeviceListQuery(BaseModel):
    """``scope_user`` is typed as the reference types it (a UUID, else 422), then set to
    the caller as the reference's server sets it: the list holds the caller's devices,
    whatever user is sent."""

    scope_user: uuid.UUID | None = Field(
        default=None, description="The user to scope this query to: the caller, whatever is sent."
    )


class DeviceQuery(BaseModel):
    user_code: str | None = Field(default=None, max_length=255)
    hydrate: bool = True


class OAuthDeviceResponseBody(BaseModel):
    created: WireDatetime
    updated: WireDatetime
    user_id: uuid.UUID | None = None
    client_id: uuid.UUID
    expires: WireDatetime | None = None
    trusted_device: bool
    status: DeviceStatus
    os: str | None = None
    ip_address: str | None = None
    hostname: str | None = None


class OAuthDeviceResponseMetadata(BaseModel):
    python_version: str | None = None
    zenml_version: str | None = None
    city: str | None = None
    region: str | None = None
    country: str | None = None
    failed_auth_attempts: int
    last_login: WireDatetime | None


class OAuthDeviceResponseResources(BaseModel):
    user: UserResponse | None = None


class OAuthDeviceResponse(
    Envelope[OAuthDeviceResponseBody, OAuthDeviceResponseMetadata, OAuthDeviceResponseResources]
):
    pass


def device_response(
    device: OAuthDevice, user: User | None, *, hydrate: bool
) -> OAuthDeviceResponse:
    return OAuthDeviceResponse(
        id=device.id,
        body=OAuthDeviceResponseBody(
            created=device.created,
            updated=device.updated,
            user_id=device.user_id,
            client_id=device.client_id,
            expires=device.expires,
            trusted_device=device.trusted_device,
            status=DeviceStatus(device.status),
            os=device.os,
            ip_address=device.ip_address,
            hostname=device.hostname,
        ),
        metadata=OAuthDeviceResponseMetadata(
            python_version=device.python_version,
            zenml_version=device.zenml_version,
            city=device.city,
            region=device.region,
            country=device.country,
            failed_auth_attempts=device.failed_auth_attempts,
            last_login=device.last_login,
        )
        if hydrate
        else None,
        resources=OAuthDeviceResponseResources(
            user=nested_user(user) if user is not None else None
        ),
    )
