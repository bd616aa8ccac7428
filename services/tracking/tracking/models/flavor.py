from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class CustomFlavor(SQLModel, table=True):
    """A flavor registered through the API (``zenml flavor register``); the built-in ones
    are code (:data:`tracking.component.flavors.FLAVORS`). ``display_name`` is kept as
    given (null: the name, title-cased, is shown), as the reference keeps it."""

    __tablename__ = "custom_flavors"
    __table_args__ = (UniqueConstraint("type", "name", name="uq_custom_flavors_type_name"),)

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    name: str = Field(max_length=255)
    type: str = Field(max_length=32)
    display_name: str | None = Field(default=None, max_length=255)
    source: str = Field(max_length=255)
    config_schema: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    integration: str | None = Field(default=None, max_length=255)
    connector_type: str | None = Field(default=None, max_length=255)
    connector_resource_type: str | None = Field(default=None, max_length=255)
    connector_resource_id_attr: str | None = Field(default=None, max_length=255)
    logo_url: str | None = None
    docs_url: str | None = None
    sdk_docs_url: str | None = None
    is_custom: bool = True
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)
