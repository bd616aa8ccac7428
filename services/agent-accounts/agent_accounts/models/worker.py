from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class Worker(SQLModel, table=True):
    """A registered worker; its tokens are scoped to it and to the account that owns it."""

    __tablename__ = "workers"

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    owner_id: uuid.UUID = Field(foreign_key="accounts.id", index=True)
    name: str = Field(max_length=255, index=True)
    scope: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    runtime: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    worker_metadata: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column("metadata", JSON, nullable=False)
    )
    last_seen_at: dt.datetime = Field(default_factory=utcnow)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow, index=True)
