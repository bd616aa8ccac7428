from __future__ import annotations

import datetime as dt
import uuid
from enum import StrEnum

from sqlalchemy import ForeignKey
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class DeviceStatus(StrEnum):
    """``OAuthDeviceStatus``: pending until a user verifies it, verified until the device
    redeems its code, then active (or locked)."""

    PENDING = "pending"
    VERIFIED = "verified"
    ACTIVE = "active"
    LOCKED = "locked"


class OAuthDevice(SQLModel, table=True):
    """A client (one ``client_id``) that logs in through the device authorization flow.

    Only SHA-256 hashes of its device and user codes are stored. ``polled_at`` and
    ``poll_interval`` enforce the polling rate (``slow_down``).
    """

    __tablename__ = "oauth_devices"

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    client_id: uuid.UUID = Field(unique=True, index=True)
    user_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("users.id", ondelete="CASCADE")],
        index=True,
    )
    status: str = Field(default=DeviceStatus.PENDING.value, max_length=16)
    device_code_hash: str = Field(max_length=64)
    user_code_hash: str = Field(max_length=64)
    expires: dt.datetime | None = None
    trusted_device: bool = False
    failed_auth_attempts: int = 0
    last_login: dt.datetime | None = None
    polled_at: dt.datetime | None = None
    poll_interval: int = 5
    ip_address: str | None = Field(default=None, max_length=64)
    hostname: str | None = Field(default=None, max_length=255)
    os: str | None = Field(default=None, max_length=255)
    python_version: str | None = Field(default=None, max_length=64)
    zenml_version: str | None = Field(default=None, max_length=64)
    city: str = Field(default="", max_length=255)
    region: str = Field(default="", max_length=255)
    country: str = Field(default="", max_length=255)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)
