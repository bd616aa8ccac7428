"""Reading triggers. This server runs no triggers: it creates none (the reference's
schedules and platform events are run by its own scheduler), so the list holds only what
another writer put in the table, and writes are refused with a 501."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.errors import PlatformError
from shared.listing import Listing
from tracking.core.errors import ScopedNotFound
from tracking.pipeline_snapshot.schemas import nested_snapshot
from tracking.project.scope import resolve_project_ref
from tracking.trigger.repository import TriggerRepository
from tracking.trigger.schemas import TriggerItem, TriggerListQuery


class TriggerNotFound(ScopedNotFound):
    resource = "trigger"


class TriggersNotRun(PlatformError):
    """The reference's answer for what a server does not implement."""

    status_code = 501
    wire_name = "NotImplementedError"

    def __init__(self) -> None:
        super().__init__(
            "Triggers are not run by this server: creating, changing or attaching them is "
            "not implemented. Use schedules or webhook triggers instead."
        )


class TriggerService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.repository = TriggerRepository(session)

    async def list_page(
        self, listing: Listing, query: TriggerListQuery
    ) -> tuple[int, list[TriggerItem]]:
        project = await resolve_project_ref(self.session, query.project)
        total, rows = await self.repository.page_archived(
            listing, project.id, query.scope_user, query.is_archived
        )
        return total, await self._items(rows)

    async def get(self, trigger_id: uuid.UUID) -> TriggerItem:
        row = await self.repository.read(trigger_id)
        if row is None:
            raise TriggerNotFound(trigger_id)
        (item,) = await self._items([row])
        return item

    async def _items(self, rows: Sequence[Any]) -> list[TriggerItem]:
        attached, sources = await self.repository.snapshots_of([row.id for row in rows])
        items = []
        for row in rows:
            snapshots = attached[row.id]
            shown = [sources.get(s.source_snapshot_id, s) for s in snapshots]
            items.append(
                TriggerItem(
                    row,
                    [nested_snapshot(s) for s in snapshots],
                    [nested_snapshot(s) for s in shown],
                )
            )
        return items
