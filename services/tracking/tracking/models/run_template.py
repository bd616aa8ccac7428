"""Run templates: a named, runnable view of a pipeline snapshot (its source snapshot)."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import ForeignKey, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class RunTemplate(SQLModel, table=True):
    """``source_snapshot_id`` is cleared when the snapshot goes, as the reference's."""

    __tablename__ = "run_templates"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_run_templates_project_name"),)

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("projects.id", ondelete="CASCADE")], nullable=False
    )
    name: str = Field(max_length=255)
    description: str | None = None
    hidden: bool = False
    source_snapshot_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("pipeline_snapshots.id", ondelete="SET NULL")],
        index=True,
    )
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)
