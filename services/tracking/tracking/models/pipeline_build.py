"""Pipeline builds: the images a pipeline's steps run in, as the client built them."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Column, ForeignKey, Index
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class PipelineBuild(SQLModel, table=True):
    """``images`` holds the build items (image, dockerfile, requirements, settings
    checksum, contains_code) by key, as the request sent them."""

    __tablename__ = "pipeline_builds"
    __table_args__ = (Index("ix_pipeline_builds_project_created", "project_id", "created"),)

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("projects.id", ondelete="CASCADE")], nullable=False
    )
    stack_id: uuid.UUID | None = Field(
        default=None, sa_column_args=[ForeignKey("stacks.id", ondelete="SET NULL")]
    )
    pipeline_id: uuid.UUID | None = Field(
        default=None, sa_column_args=[ForeignKey("pipelines.id", ondelete="SET NULL")]
    )
    images: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    is_local: bool
    contains_code: bool
    zenml_version: str | None = Field(default=None, max_length=255)
    python_version: str | None = Field(default=None, max_length=255)
    checksum: str | None = Field(default=None, max_length=255)
    stack_checksum: str | None = Field(default=None, max_length=255)
    duration: int | None = None
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)
