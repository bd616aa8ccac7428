"""Consumer-side queries: events, their trigger executions, retained raw bodies."""

from __future__ import annotations

import gzip
import uuid

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.errors import NotFound
from webhooks.models import TriggerExecution, WebhookEvent, WebhookEventPayload


class RawEventNotFound(NotFound):
    def __init__(self, delivery_id: str) -> None:
        super().__init__(f"No raw event body is kept for delivery '{delivery_id}'.")


class EventRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def raw_body(self, webhook_id: uuid.UUID, delivery_id: str) -> bytes:
        """The retained body, gzip-compressed, as stored, of the webhook's latest event
        (by receipt) with ``delivery_id``: two events may share an unsigned delivery id."""
        query = (
            select(WebhookEventPayload.body)
            .join(WebhookEvent, col(WebhookEvent.id) == col(WebhookEventPayload.event_id))
            .where(
                col(WebhookEventPayload.webhook_id) == webhook_id,
                col(WebhookEventPayload.delivery_id) == delivery_id,
            )
            .order_by(col(WebhookEvent.received_at).desc(), col(WebhookEvent.id).desc())
            .limit(1)
        )
        body = (await self.session.exec(query)).first()
        if body is None:
            raise RawEventNotFound(delivery_id)
        return body

    def retain(self, event: WebhookEvent, body: bytes) -> None:
        """Keep ``event``'s ``body`` (added with the event, in its transaction)."""
        self.session.add(
            WebhookEventPayload(
                event_id=event.id,
                webhook_id=event.webhook_id,
                delivery_id=event.delivery_id,
                body=gzip.compress(body),
            )
        )

    async def executions(self, event_id: uuid.UUID) -> list[TriggerExecution]:
        query = select(TriggerExecution).where(col(TriggerExecution.event_id) == event_id)
        return list((await self.session.exec(query.order_by(col(TriggerExecution.id)))).all())
