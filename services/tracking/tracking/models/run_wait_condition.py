"""Wait conditions: a dynamic pipeline's run waiting for outside input (a question,
answered with ``continue`` or ``abort`` and an optional result)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, CheckConstraint, Column, ForeignKey, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class RunWaitCondition(SQLModel, table=True):
    """``data_schema`` is the JSON schema a result must match; ``result`` the value given
    on resolution (JSON, ``None`` when none)."""

    __tablename__ = "run_wait_conditions"
    __table_args__ = (
        UniqueConstraint("run_id", "name", name="uq_run_wait_conditions_run_name"),
        CheckConstraint(
            "(status != 'resolved') OR (resolution IS NOT NULL)",
            name="ck_run_wait_conditions_resolved_resolution",
        ),
        Index("ix_run_wait_conditions_run_status", "run_id", "status"),
        Index("ix_run_wait_conditions_project_created", "project_id", "created"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    run_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("pipeline_runs.id", ondelete="CASCADE")], nullable=False
    )
    project_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("projects.id", ondelete="CASCADE")], nullable=False
    )
    name: str = Field(max_length=255)
    type: str = Field(max_length=32)
    status: str = Field(max_length=32)
    question: str | None = None
    data_schema: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    resolution: str | None = Field(default=None, max_length=32)
    result: Any = Field(default=None, sa_column=Column(JSON(none_as_null=True)))
    last_polled_at: dt.datetime | None = None
    poller_instance_id: str | None = Field(default=None, max_length=255)
    poller_lease_expires_at: dt.datetime | None = None
    resolved_at: dt.datetime | None = None
    resolved_by_user_id: uuid.UUID | None = None
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)
