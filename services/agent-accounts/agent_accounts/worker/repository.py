from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from agent_accounts.core.listing import CursorSpec, ListQuery, fetch_page
from agent_accounts.models import Worker
from shared.listing import Kind

WORKERS = CursorSpec(
    id_column=col(Worker.id),
    fields={
        "id": (col(Worker.id), Kind.UUID),
        "name": (col(Worker.name), Kind.STRING),
        "owner_id": (col(Worker.owner_id), Kind.UUID),
    },
    sorts={
        "created": (col(Worker.created), Kind.DATETIME),
        "updated": (col(Worker.updated), Kind.DATETIME),
        "name": (col(Worker.name), Kind.STRING),
    },
)


class WorkerRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, worker_id: uuid.UUID) -> Worker | None:
        query = select(Worker).where(col(Worker.id) == worker_id).with_for_update()
        return (await self.session.exec(query)).first()

    async def list(
        self, query: ListQuery, *, seen_after: dt.datetime | None
    ) -> tuple[list[Worker], str | None]:
        scope: list[ColumnElement[bool]] = []
        if seen_after is not None:
            scope.append(col(Worker.last_seen_at) >= seen_after)
        return await fetch_page(self.session, select(Worker), query, WORKERS, scope=scope)

    async def add(self, worker: Worker) -> Worker:
        self.session.add(worker)
        await self.session.flush()
        return worker

    async def delete(self, worker: Worker) -> None:
        await self.session.delete(worker)
        await self.session.flush()
