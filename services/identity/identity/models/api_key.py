from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import ForeignKey, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class APIKey(SQLModel, table=True):
    """A service account's API key (``ZENKEY_...``, shown once).

    Only SHA-256 hashes of its 256-bit secrets are stored: the current one, and the one
    it replaced while the rotation's grace window (``retain_period`` minutes from
    ``last_rotated``) lasts. ``key_generation`` counts rotations; a login's token
    carries it (``key_gen``), so rotating retires the old key's tokens with the old key.
    """

    __tablename__ = "service_account_api_keys"
    __table_args__ = (UniqueConstraint("service_account_id", "name"),)

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    service_account_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("users.id", ondelete="CASCADE")], index=True
    )
    name: str = Field(max_length=255)
    description: str = Field(default="", sa_type=Text)
    key_hash: str = Field(max_length=64)
    previous_key_hash: str | None = Field(default=None, max_length=64)
    key_generation: int = 1
    retain_period: int = 0
    active: bool = True
    last_login: dt.datetime | None = None
    last_rotated: dt.datetime | None = None
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)
