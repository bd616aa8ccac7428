"""Triggers (schedules and platform events that start runs of snapshots) and the
snapshots they are attached to."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Column, ForeignKey, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class Trigger(SQLModel, table=True):
    """``configuration`` holds the type's own fields (a schedule's cron expression …)."""

    __tablename__ = "triggers"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_triggers_project_name"),)

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("projects.id", ondelete="CASCADE")], nullable=False
    )
    name: str = Field(max_length=255, index=True)
    active: bool = True
    is_archived: bool = False
    type: str = Field(max_length=20)
    flavor: str = Field(max_length=50)
    concurrency: str = Field(max_length=20)
    configuration: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    next_occurrence: dt.datetime | None = None
    source_entity: str | None = Field(default=None, max_length=255)
    target_events: str | None = None
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)


class TriggerSnapshot(SQLModel, table=True):
    __tablename__ = "trigger_snapshots"

    trigger_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("triggers.id", ondelete="CASCADE")], primary_key=True
    )
    snapshot_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("pipeline_snapshots.id", ondelete="CASCADE")],
        primary_key=True,
    )
    created: dt.datetime = Field(default_factory=utcnow)
