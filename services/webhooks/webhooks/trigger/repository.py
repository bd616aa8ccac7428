"""Trigger queries and the list declarations."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import update
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import Kind, Listing, ListSpec, SortKey, base_fields, column_field, fetch_page
from shared.users import user_field
from webhooks.models import TriggerExecution, WebhookTrigger

TRIGGERS = ListSpec(
    resource="webhook_trigger",
    id_column=col(WebhookTrigger.id),
    fields=[
        *base_fields(
            col(WebhookTrigger.id), col(WebhookTrigger.created), col(WebhookTrigger.updated)
        ),
        column_field("name", col(WebhookTrigger.name), Kind.STRING),
        column_field("active", col(WebhookTrigger.active), Kind.BOOL),
        column_field("is_archived", col(WebhookTrigger.is_archived), Kind.BOOL),
        column_field("concurrency", col(WebhookTrigger.concurrency), Kind.STRING),
        column_field("webhook_id", col(WebhookTrigger.webhook_id), Kind.UUID),
        column_field("snapshot_id", col(WebhookTrigger.snapshot_id), Kind.UUID),
        user_field(col(WebhookTrigger.user_id)),
    ],
    sort_keys=[
        SortKey("created", col(WebhookTrigger.created)),
        SortKey("updated", col(WebhookTrigger.updated)),
        SortKey("id", col(WebhookTrigger.id)),
        SortKey("name", col(WebhookTrigger.name)),
    ],
)

EXECUTIONS = ListSpec(
    resource="webhook_trigger_execution",
    id_column=col(TriggerExecution.id),
    fields=[
        *base_fields(
            col(TriggerExecution.id), col(TriggerExecution.created), col(TriggerExecution.updated)
        ),
        column_field("status", col(TriggerExecution.status), Kind.STRING),
        column_field("delivery_id", col(TriggerExecution.delivery_id), Kind.STRING),
        column_field("event_id", col(TriggerExecution.event_id), Kind.UUID),
    ],
    sort_keys=[
        SortKey("created", col(TriggerExecution.created)),
        SortKey("updated", col(TriggerExecution.updated)),
        SortKey("id", col(TriggerExecution.id)),
    ],
)


class TriggerRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, trigger_id: uuid.UUID) -> WebhookTrigger | None:
        return await self.session.get(WebhookTrigger, trigger_id)

    async def page(
        self, listing: Listing, project_id: uuid.UUID, scope_user: uuid.UUID | None
    ) -> tuple[int, list[WebhookTrigger]]:
        scope: list[ColumnElement[bool]] = [col(WebhookTrigger.project_id) == project_id]
        if scope_user is not None:
            scope.append(col(WebhookTrigger.user_id) == scope_user)
        return await fetch_page(
            self.session, TRIGGERS, listing, select(WebhookTrigger), scope=scope
        )

    async def executions(
        self, listing: Listing, trigger_id: uuid.UUID
    ) -> tuple[int, list[TriggerExecution]]:
        scope = [col(TriggerExecution.trigger_id) == trigger_id]
        return await fetch_page(
            self.session, EXECUTIONS, listing, select(TriggerExecution), scope=scope
        )

    async def execution(
        self, trigger_id: uuid.UUID, execution_id: uuid.UUID
    ) -> TriggerExecution | None:
        execution = await self.session.get(TriggerExecution, execution_id)
        return execution if execution is not None and execution.trigger_id == trigger_id else None

    async def mark_retried(self, execution_id: uuid.UUID, now: dt.datetime) -> bool:
        """A failed execution never retried before becomes pending again, retried at
        ``now``; whether it was (one conditional UPDATE, so of two admins asking at once
        one wins)."""
        statement = (
            update(TriggerExecution)
            .where(
                col(TriggerExecution.id) == execution_id,
                col(TriggerExecution.status) == "failed",
                col(TriggerExecution.retried_at).is_(None),
            )
            .values(status="pending", retried_at=now, next_attempt_at=now, updated=now)
            .execution_options(synchronize_session=False)
        )
        result = await self.session.exec(statement)
        return bool(result.rowcount)

    async def live_for(self, webhook_id: uuid.UUID) -> list[WebhookTrigger]:
        """The triggers an event of ``webhook_id`` can set off."""
        query = select(WebhookTrigger).where(
            col(WebhookTrigger.webhook_id) == webhook_id,
            col(WebhookTrigger.active).is_(True),
            col(WebhookTrigger.is_archived).is_(False),
        )
        return list((await self.session.exec(query.order_by(col(WebhookTrigger.id)))).all())
