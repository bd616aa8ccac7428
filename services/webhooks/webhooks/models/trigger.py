from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Column, ForeignKey, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class WebhookTrigger(SQLModel, table=True):
    """Runs ``snapshot_id`` (a tracking pipeline snapshot) when an event of its webhook
    matches ``configuration`` (the provider's filter language). Deleting the webhook
    leaves archived triggers with ``webhook_id`` null."""

    __tablename__ = "webhook_triggers"
    __table_args__ = (
        UniqueConstraint("project_id", "name", name="uq_webhook_triggers_project_name"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = Field(index=True)
    user_id: uuid.UUID | None = Field(default=None, index=True)
    name: str = Field(max_length=255, index=True)
    webhook_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("webhooks.id", ondelete="SET NULL")],
        index=True,
    )
    snapshot_id: uuid.UUID = Field(index=True)
    configuration: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    run_configuration: dict[str, Any] | None = Field(
        default=None, sa_column=Column(JSON, nullable=True)
    )
    active: bool = True
    concurrency: str = Field(default="skip", max_length=16)
    is_archived: bool = Field(default=False, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)
