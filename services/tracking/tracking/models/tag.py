from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import ForeignKey, Index
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class Tag(SQLModel, table=True):
    __tablename__ = "tags"

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    name: str = Field(max_length=255, unique=True, index=True)
    color: str = Field(max_length=16)
    exclusive: bool = False
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)


class TagResource(SQLModel, table=True):
    """A tag on one resource (``resource_type`` names the table: artifact, ...)."""

    __tablename__ = "tag_resources"
    __table_args__ = (Index("ix_tag_resources_resource", "resource_type", "resource_id"),)

    tag_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("tags.id", ondelete="CASCADE")], primary_key=True
    )
    resource_id: uuid.UUID = Field(primary_key=True)
    resource_type: str = Field(max_length=32, primary_key=True)
    created: dt.datetime = Field(default_factory=utcnow)
