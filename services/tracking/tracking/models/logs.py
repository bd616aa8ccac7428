"""Where a run's, a step's or the client's logs were written (a file in an artifact store,
or a log store's records): the server keeps the reference, the client reads the logs."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import ForeignKey
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class Logs(SQLModel, table=True):
    __tablename__ = "logs"

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("projects.id", ondelete="CASCADE")], nullable=False
    )
    uri: str | None = None
    source: str = Field(default="", max_length=255)
    artifact_store_id: uuid.UUID | None = Field(
        default=None, sa_column_args=[ForeignKey("stack_components.id", ondelete="SET NULL")]
    )
    log_store_id: uuid.UUID | None = Field(
        default=None, sa_column_args=[ForeignKey("stack_components.id", ondelete="SET NULL")]
    )
    pipeline_run_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("pipeline_runs.id", ondelete="CASCADE")],
        index=True,
    )
    step_run_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("step_runs.id", ondelete="CASCADE")],
        index=True,
    )
    hook_invocation_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("hook_invocations.id", ondelete="CASCADE")],
    )
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)
