from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Column, Text
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class User(SQLModel, table=True):
    __tablename__ = "users"

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    name: str = Field(max_length=255, unique=True, index=True)
    full_name: str = Field(default="", max_length=255)
    email: str | None = Field(default=None, max_length=255)
    email_opted_in: bool | None = None
    password_hash: str | None = Field(default=None, max_length=255)
    # SHA-256 of the one-time activation token; the token itself is shown once.
    activation_token_hash: str | None = Field(default=None, max_length=64)
    active: bool = False
    is_admin: bool = False
    is_service_account: bool = False
    external_user_id: uuid.UUID | None = None
    default_project_id: uuid.UUID | None = None
    avatar_url: str | None = None
    # A service account's description (users have none).
    description: str = Field(default="", sa_type=Text)
    user_metadata: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    password_changed_at: dt.datetime | None = None
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)
