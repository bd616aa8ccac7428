from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Column, ForeignKey, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class Deployment(SQLModel, table=True):
    __tablename__ = "deployments"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_deployments_project_name"),)

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("projects.id", ondelete="CASCADE")], nullable=False, index=True
    )
    name: str = Field(max_length=255, index=True)
    status: str = Field(default="unknown", max_length=16, index=True)
    url: str | None = None
    auth_key: str | None = None
    deployment_metadata: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    snapshot_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("pipeline_snapshots.id", ondelete="SET NULL")],
        index=True,
    )
    deployer_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("stack_components.id", ondelete="SET NULL")],
        index=True,
    )
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)
