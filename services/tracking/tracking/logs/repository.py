"""Logs queries: by id, and every log of a page of runs or steps at once."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from typing import Any

from sqlalchemy import Table, bindparam
from sqlalchemy import insert as sa_insert
from sqlalchemy import select as sa_select
from sqlalchemy import update as sa_update
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute, flush_unique, utcnow
from shared.errors import Conflict
from tracking.core.repository import rendered_columns
from tracking.models import Logs

TABLE: Table = Logs.__table__  # type: ignore[attr-defined]
_COLUMNS = sa_select(*rendered_columns(TABLE))
_BY_ID = _COLUMNS.where(TABLE.c.id == bindparam("id", type_=TABLE.c.id.type))


class LogsRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def project_of(self, model: Any, owner_id: uuid.UUID) -> uuid.UUID | None:
        """The project of the run or step (``model``) of ``owner_id``, if there is one."""
        query = sa_select(col(model.project_id)).where(col(model.id) == owner_id)
        found = (await self.session.exec(query)).first()  # type: ignore[call-overload]
        return uuid.UUID(str(found[0])) if found is not None else None

    async def read(self, logs_id: uuid.UUID) -> Any | None:
        return (await core_execute(self.session, _BY_ID, {"id": logs_id})).first()

    async def insert(self, values: Mapping[str, Any]) -> None:
        clash = Conflict(f"Unable to create logs with ID '{values['id']}': they already exist.")
        await flush_unique(self.session, clash, sa_insert(TABLE).values(dict(values)))

    async def attach(
        self, ids: Collection[uuid.UUID], *, run_id: uuid.UUID | None, step_id: uuid.UUID | None
    ) -> None:
        """Make ``ids`` the logs of one run or one step (and of nothing else)."""
        if ids:
            statement = (
                sa_update(TABLE)
                .where(TABLE.c.id.in_(list(ids)))
                .values(pipeline_run_id=run_id, step_run_id=step_id, updated=utcnow())
            )
            await self.session.exec(statement)

    async def of(self, owner: str, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, list[Any]]:
        """The logs of each of ``ids`` (``owner``: ``pipeline_run_id`` or ``step_run_id``),
        oldest first, in one query."""
        found: dict[uuid.UUID, list[Any]] = {i: [] for i in ids}
        if not ids:
            return found
        column = TABLE.c[owner]
        query = _COLUMNS.where(column.in_(list(ids))).order_by(col(Logs.created), col(Logs.id))
        for row in (await self.session.exec(query)).all():  # type: ignore[call-overload]
            found[getattr(row, owner)].append(row)
        return found
