from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import Column, ForeignKey, Index, LargeBinary, Text
from sqlmodel import Field, SQLModel

from shared.db import utcnow


class WebhookEvent(SQLModel, table=True):
    """An accepted event as the consumer saw it. The primary key is the event id (derived
    from the webhook and the delivery's key, what its signature covers:
    :func:`webhooks.event.queue.event_id_for`), which makes the consumer idempotent: a
    redelivered or replayed event finds its row and runs nothing again."""

    __tablename__ = "webhook_events"

    id: uuid.UUID = Field(primary_key=True)
    webhook_id: uuid.UUID = Field(index=True)
    project_id: uuid.UUID = Field(index=True)
    webhook_type: str = Field(max_length=32)
    event_type: str | None = Field(default=None, max_length=255)
    delivery_id: str = Field(max_length=255)
    received_at: dt.datetime
    # received → processed (every matching trigger's run requested) | failed (gave up)
    status: str = Field(default="received", max_length=16, index=True)
    matched: int = 0
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    processed_at: dt.datetime | None = None


class WebhookEventPayload(SQLModel, table=True):
    """The raw body of an event that matched a trigger (gzip), kept as delivered, one per
    event: a delivery id may be an unsigned label that two events share (see
    :class:`WebhookEvent`), so it is only an index here, not the key."""

    __tablename__ = "webhook_event_payloads"
    __table_args__ = (Index("ix_webhook_event_payloads_delivery", "webhook_id", "delivery_id"),)

    event_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("webhook_events.id", ondelete="CASCADE")], primary_key=True
    )
    webhook_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("webhooks.id", ondelete="CASCADE")], nullable=False
    )
    delivery_id: str = Field(max_length=255)
    body: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    created: dt.datetime = Field(default_factory=utcnow)


class TriggerExecution(SQLModel, table=True):
    """One trigger's reaction to one event: the snapshot run it requested from tracking.
    The id is derived from (event, trigger), so an event processed twice finds it."""

    __tablename__ = "webhook_trigger_executions"

    id: uuid.UUID = Field(primary_key=True)
    event_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("webhook_events.id", ondelete="CASCADE")], index=True
    )
    trigger_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("webhook_triggers.id", ondelete="SET NULL")],
        index=True,
    )
    webhook_id: uuid.UUID = Field(index=True)
    project_id: uuid.UUID
    snapshot_id: uuid.UUID
    delivery_id: str = Field(max_length=255)
    event_type: str | None = Field(default=None, max_length=255)
    # pending → dispatched (tracking accepted the run) | failed (tracking refused it, or
    # stayed out of reach past the retry horizon); failed → pending once, by an admin.
    status: str = Field(default="pending", max_length=16, index=True)
    run_id: uuid.UUID | None = None
    attempts: int = 0
    # The last failure, transient ones included (kept while the execution waits).
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    # When a pending execution that failed for a transient reason is tried again (as its
    # job's score in the queue says; shown, not read back).
    next_attempt_at: dt.datetime | None = None
    # When an admin re-ran the failed execution (at most once).
    retried_at: dt.datetime | None = None
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)
