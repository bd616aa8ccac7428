from __future__ import annotations

import datetime as dt
import uuid

from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class ApiKey(SQLModel, table=True):
    """A long-lived credential. Only SHA-256 hashes of its secrets are stored; the key
    names its own id, so a lookup is one primary-key read. After a rotation the previous
    secret keeps working for ``retain_period_minutes`` from ``last_rotated``."""

    __tablename__ = "api_keys"

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    owner_id: uuid.UUID = Field(foreign_key="accounts.id", index=True)
    created_by: uuid.UUID | None = None
    name: str = Field(max_length=255, unique=True, index=True)
    key_hash: str = Field(max_length=64)
    previous_key_hash: str | None = Field(default=None, max_length=64)
    retain_period_minutes: int = 0
    active: bool = True
    last_used: dt.datetime | None = None
    last_rotated: dt.datetime | None = None
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow, index=True)
