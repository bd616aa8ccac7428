"""Webhook queries and the list declaration."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import update
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import (
    Condition,
    Kind,
    Listing,
    ListSpec,
    Op,
    SortKey,
    base_fields,
    column_field,
    fetch_page,
)
from shared.listing.spec import as_uuid_condition
from shared.listing.sql import condition_sql
from shared.users import user_field
from webhooks.models import Webhook, WebhookTrigger

WEBHOOKS = ListSpec(
    resource="webhook",
    id_column=col(Webhook.id),
    fields=[
        *base_fields(col(Webhook.id), col(Webhook.created), col(Webhook.updated)),
        column_field("name", col(Webhook.name), Kind.STRING),
        column_field("webhook_type", col(Webhook.webhook_type), Kind.STRING),
        column_field("active", col(Webhook.active), Kind.BOOL),
        user_field(col(Webhook.user_id)),
    ],
    sort_keys=[
        SortKey(name, expression)
        for name, expression in (
            ("created", col(Webhook.created)),
            ("updated", col(Webhook.updated)),
            ("id", col(Webhook.id)),
            ("name", col(Webhook.name)),
            ("webhook_type", col(Webhook.webhook_type)),
            ("active", col(Webhook.active)),
            ("user", col(Webhook.user_id)),
        )
    ],
)

MAX_MATCHES = 2  # enough to tell "one" from "ambiguous"


class WebhookRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, webhook_id: uuid.UUID) -> Webhook | None:
        return await self.session.get(Webhook, webhook_id)

    async def find(self, reference: str, project_id: uuid.UUID | None) -> Sequence[Webhook]:
        """By id, else by name (in ``project_id`` when given), else by id prefix."""
        try:
            found = await self.get(uuid.UUID(reference))
        except ValueError:
            found = None
        if found is not None:
            return [found]
        scope: list[ColumnElement[bool]] = []
        if project_id is not None:
            scope.append(col(Webhook.project_id) == project_id)
        by_name = select(Webhook).where(col(Webhook.name) == reference, *scope)
        named = list((await self.session.exec(by_name.limit(MAX_MATCHES))).all())
        if named:
            return named
        prefix = reference.replace("-", "").lower()
        if not prefix or any(c not in "0123456789abcdef" for c in prefix):
            return []
        condition = as_uuid_condition(Condition(Op.STARTSWITH, prefix))
        by_prefix = select(Webhook).where(
            condition_sql(col(Webhook.id), Kind.UUID, condition), *scope
        )
        return list((await self.session.exec(by_prefix.limit(MAX_MATCHES))).all())

    async def page(
        self,
        listing: Listing,
        project_id: uuid.UUID,
        scope_user: uuid.UUID | None,
    ) -> tuple[int, list[Webhook]]:
        scope: list[ColumnElement[bool]] = [col(Webhook.project_id) == project_id]
        if scope_user is not None:
            scope.append(col(Webhook.user_id) == scope_user)
        return await fetch_page(self.session, WEBHOOKS, listing, select(Webhook), scope=scope)

    async def has_live_triggers(self, webhook_id: uuid.UUID) -> bool:
        query = select(WebhookTrigger.id).where(
            col(WebhookTrigger.webhook_id) == webhook_id,
            col(WebhookTrigger.is_archived).is_(False),
        )
        return (await self.session.exec(query.limit(1))).first() is not None

    async def detach_archived_triggers(self, webhook_id: uuid.UUID) -> None:
        await self.session.exec(
            update(WebhookTrigger)
            .where(col(WebhookTrigger.webhook_id) == webhook_id)
            .values(webhook_id=None)
        )

    async def delete(self, webhook: Webhook) -> None:
        await self.session.delete(webhook)
        await self.session.flush()
