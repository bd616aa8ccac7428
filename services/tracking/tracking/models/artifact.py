from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import ForeignKey, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class Artifact(SQLModel, table=True):
    __tablename__ = "artifacts"
    __table_args__ = (
        UniqueConstraint("project_id", "name", name="uq_artifacts_project_name"),
        Index("ix_artifacts_project_created", "project_id", "created"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("projects.id", ondelete="CASCADE")], nullable=False
    )
    name: str = Field(max_length=255, index=True)
    has_custom_name: bool = False
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)
