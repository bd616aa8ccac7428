from __future__ import annotations

import datetime as dt
import uuid

from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class Device(SQLModel, table=True):
    """A machine authorized through the device flow (the CLI's ``kitaru login URL``).

    Only SHA-256 hashes of its two codes are stored. ``status`` goes ``pending`` →
    ``verified`` (an account approved it with the user code) → ``active`` (the device
    exchanged its device code for a session). The device code stays a refresh credential
    of an active device until the device is deleted, locked or expired. ``expires`` is the
    end of the authorization window while the device is not active, then the device's
    own expiry (``None``: it never expires). Failed code checks are counted; at the
    configured maximum the device locks.
    """

    __tablename__ = "devices"

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    account_id: uuid.UUID | None = Field(default=None, foreign_key="accounts.id", index=True)
    user_code_hash: str = Field(max_length=64)
    device_code_hash: str = Field(max_length=64)
    status: str = Field(default="pending", max_length=16, index=True)
    locked: bool = False
    trusted: bool = False
    failed_auth_attempts: int = 0
    expires: dt.datetime | None = Field(default=None, index=True)
    last_login: dt.datetime | None = None
    # When the device code was last presented while waiting (for ``slow_down``).
    last_polled: dt.datetime | None = None
    hostname: str | None = Field(default=None, max_length=255)
    os: str | None = Field(default=None, max_length=255)
    ip_address: str | None = Field(default=None, max_length=64)
    python_version: str | None = Field(default=None, max_length=255)
    client_version: str | None = Field(default=None, max_length=255)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow, index=True)

    def is_expired(self, now: dt.datetime) -> bool:
        if self.expires is None:
            return False
        expires = self.expires if self.expires.tzinfo else self.expires.replace(tzinfo=dt.UTC)
        return expires <= now

    def backs_sessions_of(self, account_id: uuid.UUID, now: dt.datetime) -> bool:
        """Whether a session token naming this device may still act for ``account_id``:
        the device is active, approved by that account, not locked and not expired."""
        return (
            self.status == "active"
            and self.account_id == account_id
            and not self.locked
            and not self.is_expired(now)
        )
