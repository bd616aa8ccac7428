from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Column, Text
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class ServiceConnector(SQLModel, table=True):
    """A service connector: how to reach a cloud or registry, with its credentials.

    ``configuration`` holds the fields its auth method does not mark as secret;
    ``encrypted_secrets`` one Fernet token (COMPONENT_SECRET_KEYS, as a secret's values)
    of the secret fields as a JSON object, null when it has none. Names are unique, as
    on the reference."""

    __tablename__ = "service_connectors"

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    name: str = Field(max_length=255, unique=True, index=True)
    connector_type: str = Field(max_length=255, index=True)
    description: str = Field(default="", sa_column=Column(Text, nullable=False))
    auth_method: str = Field(max_length=255)
    resource_types: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    resource_id: str | None = Field(default=None, max_length=255)
    supports_instances: bool = False
    configuration: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    encrypted_secrets: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    expires_at: dt.datetime | None = None
    expires_skew_tolerance: int | None = None
    expiration_seconds: int | None = None
    labels: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    user_id: uuid.UUID = Field(index=True)
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)
