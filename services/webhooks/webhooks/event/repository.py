"""Consumer-side queries: events, their trigger executions, retained raw bodies."""

from __future__ import annotations

import gzip
import uuid

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.errors import NotFound
from webhooks.models import TriggerExecution, WebhookEventPayload


class RawEventNotFound(NotFound):
    def __init__(self, delivery_id: str) -> None:
        super().__init__(f"No raw event body is kept for delivery '{delivery_id}'.")


class EventRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def raw_body(self, webhook_id: uuid.UUID, delivery_id: str) -> bytes:
        """The retained body, gzip-compressed, as stored."""
        row = await self.session.get(WebhookEventPayload, (webhook_id, delivery_id))
        if row is None:
            raise RawEventNotFound(delivery_id)
        return row.body

    async def retain(self, webhook_id: uuid.UUID, delivery_id: str, body: bytes) -> None:
        """Keep ``body`` (the first copy of a delivery wins)."""
        if await self.session.get(WebhookEventPayload, (webhook_id, delivery_id)) is None:
            self.session.add(
                WebhookEventPayload(
                    webhook_id=webhook_id, delivery_id=delivery_id, body=gzip.compress(body)
                )
            )

    async def executions(self, event_id: uuid.UUID) -> list[TriggerExecution]:
        query = select(TriggerExecution).where(col(TriggerExecution.event_id) == event_id)
        return list((await self.session.exec(query.order_by(col(TriggerExecution.id)))).all())
