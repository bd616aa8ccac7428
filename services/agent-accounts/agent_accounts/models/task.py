"""The minimal tasks, sessions and blobs that task tokens guard."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Column, Index, LargeBinary, Text
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class AgentSession(SQLModel, table=True):
    """A recorded agent session (its payload is opaque JSON here)."""

    __tablename__ = "agent_sessions"
    # Keyset pages walk (sort column, id); a task token lists what its task produced.
    __table_args__ = (
        Index("ix_agent_sessions_created_id", "created", "id"),
        Index("ix_agent_sessions_updated_id", "updated", "id"),
        Index("ix_agent_sessions_task_created_id", "produced_by_task_id", "created", "id"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    owner_id: uuid.UUID = Field(foreign_key="accounts.id", index=True)
    name: str = Field(max_length=255)
    data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    # Set when a task token wrote it: that task may read it back.
    produced_by_task_id: uuid.UUID | None = None
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)


class Blob(SQLModel, table=True):
    __tablename__ = "blobs"

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    owner_id: uuid.UUID = Field(foreign_key="accounts.id", index=True)
    content: bytes = Field(sa_type=LargeBinary)
    sha256: str = Field(max_length=64)
    size: int
    produced_by_task_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow, index=True)


class Task(SQLModel, table=True):
    """Work an account queues for a worker, with the sessions and blobs it may touch.

    ``attempt`` grows with every claim; a task token names its attempt, so the token of
    an attempt that was requeued stops working. ``run`` is an agent task's command
    (``{"command", "working_dir", "env"}``); the attempt's holder reports ``status``,
    ``error`` and ``result``.
    """

    __tablename__ = "tasks"
    # Keyset pages walk (sort column, id); claims and status filters read pending tasks
    # oldest first.
    __table_args__ = (
        Index("ix_tasks_created_id", "created", "id"),
        Index("ix_tasks_updated_id", "updated", "id"),
        Index("ix_tasks_status_created_id", "status", "created", "id"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    owner_id: uuid.UUID = Field(foreign_key="accounts.id", index=True)
    kind: str = Field(max_length=32)
    status: str = Field(default="pending", max_length=16)
    timeout_seconds: int
    attempt: int = 0
    worker_id: uuid.UUID | None = Field(default=None, foreign_key="workers.id")
    session_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    blob_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    run: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    error: str | None = Field(default=None, sa_type=Text)
    result: Any = Field(default=None, sa_column=Column(JSON, nullable=True))
    claimed_at: dt.datetime | None = None
    started_at: dt.datetime | None = None
    ended_at: dt.datetime | None = None
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)
