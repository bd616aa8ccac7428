"""Services (model deployers' servers and the like) that a client records with their
configuration, status and endpoint."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Column, ForeignKey, Text
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class Service(SQLModel, table=True):
    """``config`` is the configuration's JSON text as sent (keys in the client's order):
    a second service of the same configuration is refused, as the reference compares
    that text. ``type`` and ``flavor`` repeat the service type's, and ``pipeline_name``
    and ``pipeline_step_name`` the configuration's, to filter on."""

    __tablename__ = "services"

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("projects.id", ondelete="CASCADE")], nullable=False
    )
    name: str = Field(max_length=255)
    service_type: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    type: str = Field(sa_column=Column(Text, nullable=False))
    flavor: str = Field(sa_column=Column(Text, nullable=False))
    service_source: str | None = None
    admin_state: str | None = Field(default=None, max_length=32)
    state: str | None = Field(default=None, max_length=32)
    labels: dict[str, str] | None = Field(default=None, sa_column=Column(JSON))
    config: str = Field(sa_column=Column(Text, nullable=False, index=True))
    status: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    endpoint: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    prediction_url: str | None = None
    health_check_url: str | None = None
    pipeline_name: str | None = None
    pipeline_step_name: str | None = None
    model_version_id: uuid.UUID | None = None
    pipeline_run_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("pipeline_runs.id", ondelete="SET NULL")],
        index=True,
    )
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)
