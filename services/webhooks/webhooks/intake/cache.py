"""The intake's in-process view of webhooks: what a delivery needs (type, active,
project, plaintext secret, version), read from the database once and then trusted only
while Redis says its version is current (see :mod:`webhooks.core.live`)."""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass

from shared.db import SessionMaker, session_scope
from shared.secret_box import SecretBox
from webhooks.core.live import LiveState
from webhooks.models import Webhook

# Ids nobody created: remembered briefly, so random ids cost no database read each. A new
# webhook gets a fresh random id, so a remembered miss never hides a real webhook.
MISS_TTL = 30.0


@dataclass(frozen=True)
class CachedWebhook:
    id: uuid.UUID
    project_id: uuid.UUID
    webhook_type: str
    active: bool
    secret: str
    version: int
    key: str  # the id's canonical text, which every accepted delivery's event id hashes


class WebhookCache:
    def __init__(
        self,
        sessionmaker: SessionMaker,
        box: SecretBox,
        live: LiveState,
        *,
        max_entries: int = 10_000,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._box = box
        self._live = live
        self._max_entries = max_entries
        self._found: OrderedDict[uuid.UUID, CachedWebhook] = OrderedDict()
        self._missing: OrderedDict[uuid.UUID, float] = OrderedDict()

    def cached(self, webhook_id: uuid.UUID) -> CachedWebhook | None:
        """The webhook as cached, without a lookup (``None``: ask :meth:`get`)."""
        return self._found.get(webhook_id)

    async def get(self, webhook_id: uuid.UUID) -> CachedWebhook | None:
        cached = self._found.get(webhook_id)
        if cached is not None:
            return cached
        missed = self._missing.get(webhook_id)
        if missed is not None and missed > time.monotonic():
            return None
        return await self._load(webhook_id)

    def evict(self, webhook_id: uuid.UUID) -> None:
        self._found.pop(webhook_id, None)
        self._missing.pop(webhook_id, None)

    async def _load(self, webhook_id: uuid.UUID) -> CachedWebhook | None:
        async with session_scope(self._sessionmaker) as session:
            row = await session.get(Webhook, webhook_id)
        if row is None:
            self._remember_miss(webhook_id)
            return None
        loaded = CachedWebhook(
            id=row.id,
            project_id=row.project_id,
            webhook_type=row.webhook_type,
            active=row.active,
            secret=self._box.decrypt(row.secret_ciphertext),
            version=row.version,
            key=str(row.id),
        )
        await self._live.publish(row.id, row.version)
        self._found[webhook_id] = loaded
        while len(self._found) > self._max_entries:
            self._found.popitem(last=False)
        return loaded

    def _remember_miss(self, webhook_id: uuid.UUID) -> None:
        self._missing[webhook_id] = time.monotonic() + MISS_TTL
        while len(self._missing) > self._max_entries:
            self._missing.popitem(last=False)
