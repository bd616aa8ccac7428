from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Column, ForeignKey, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class CodeRepository(SQLModel, table=True):
    __tablename__ = "code_repositories"
    __table_args__ = (
        UniqueConstraint("project_id", "name", name="uq_code_repositories_project_name"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("projects.id", ondelete="CASCADE")], nullable=False, index=True
    )
    name: str = Field(max_length=255, index=True)
    config: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    source: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    logo_url: str | None = None
    description: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)
