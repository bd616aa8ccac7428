"""Hook invocations: one run of a pipeline's or step's hook (init, cleanup, success,
failure) and how it ended."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Column, ForeignKey, Index
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class HookInvocation(SQLModel, table=True):
    __tablename__ = "hook_invocations"
    __table_args__ = (Index("ix_hook_invocations_project_created", "project_id", "created"),)

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("projects.id", ondelete="CASCADE")], nullable=False
    )
    pipeline_run_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("pipeline_runs.id", ondelete="CASCADE")],
        nullable=False,
        index=True,
    )
    step_run_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("step_runs.id", ondelete="CASCADE")],
        index=True,
    )
    hook_type: str = Field(max_length=32)
    name: str | None = Field(default=None, max_length=255)
    status: str = Field(max_length=32)
    start_time: dt.datetime
    end_time: dt.datetime | None = None
    source: str | None = None
    exception_info: dict[str, Any] | None = Field(
        default=None, sa_column=Column(JSON, nullable=True)
    )
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)


class HookInvocationOutput(SQLModel, table=True):
    """An artifact version a hook invocation produced, under its output name."""

    __tablename__ = "hook_invocation_outputs"
    __table_args__ = (Index("ix_hook_invocation_outputs_version", "artifact_version_id"),)

    hook_invocation_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("hook_invocations.id", ondelete="CASCADE")],
        primary_key=True,
    )
    name: str = Field(max_length=255, primary_key=True)
    artifact_version_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("artifact_versions.id", ondelete="CASCADE")],
        primary_key=True,
    )
