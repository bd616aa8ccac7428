from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Column, ForeignKey, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class StackComponent(SQLModel, table=True):
    __tablename__ = "stack_components"
    __table_args__ = (UniqueConstraint("type", "name", name="uq_stack_components_type_name"),)

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    name: str = Field(max_length=255, index=True)
    type: str = Field(max_length=32, index=True)
    flavor: str = Field(max_length=255)
    configuration: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    environment: dict[str, str] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    secrets: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    # The configuration's secret fields (its flavor's ``SecretField``s), each a Fernet token
    # under COMPONENT_SECRET_KEYS; ``configuration`` holds every other field.
    encrypted_secrets: dict[str, str] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False, server_default="{}")
    )
    labels: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    connector_resource_id: str | None = None
    # The service connector it reaches its resource through (refused while linked).
    connector_id: uuid.UUID | None = Field(
        default=None, foreign_key="service_connectors.id", index=True
    )
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)


class Stack(SQLModel, table=True):
    __tablename__ = "stacks"

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    name: str = Field(max_length=255, unique=True, index=True)
    description: str = Field(default="", max_length=255)
    stack_spec_path: str | None = None
    environment: dict[str, str] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    secrets: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    labels: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)


class StackComposition(SQLModel, table=True):
    """Which components make up which stack."""

    __tablename__ = "stack_compositions"

    stack_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("stacks.id", ondelete="CASCADE")], primary_key=True
    )
    component_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("stack_components.id", ondelete="CASCADE")],
        primary_key=True,
        index=True,
    )
