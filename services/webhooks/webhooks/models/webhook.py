from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class Webhook(SQLModel, table=True):
    """A project's webhook. ``project_id`` names a project of the tracking service (no
    foreign key: another service's database). ``version`` grows with every change the
    intake must see at once (type, active, secret, deletion): intake caches the row and
    checks its version in Redis on every delivery."""

    __tablename__ = "webhooks"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_webhooks_project_name"),)

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = Field(index=True)
    user_id: uuid.UUID | None = Field(default=None, index=True)
    name: str = Field(max_length=255, index=True)
    webhook_type: str = Field(max_length=32, index=True)
    active: bool = True
    secret_ciphertext: str = Field(sa_column=Column(Text, nullable=False))
    version: int = 1
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)
