from __future__ import annotations

import datetime as dt
from collections.abc import Collection

from sqlalchemy import update
from sqlalchemy.dialects.postgresql import insert
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from identity.models import ServerSettings


class ServerSettingsRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def ensure(self, initial: ServerSettings) -> None:
        """Store ``initial`` unless the row exists already."""
        values = initial.model_dump()
        await self.session.exec(insert(ServerSettings).values(**values).on_conflict_do_nothing())

    async def get(self, *, for_update: bool = False) -> ServerSettings:
        query = select(ServerSettings)
        if for_update:
            query = query.with_for_update()
        return (await self.session.exec(query)).one()

    async def complete_steps(self, steps: Collection[str], now: dt.datetime) -> None:
        """Add ``steps`` to the completed ones (with the row locked, so concurrent
        completions all stay). Steps completed long ago, the usual case, lock nothing."""
        if set(steps) <= set((await self.get()).onboarding_state):
            return
        row = await self.get(for_update=True)
        missing = sorted(set(steps) - set(row.onboarding_state))
        if missing:
            row.onboarding_state = [*row.onboarding_state, *missing]
            row.updated = now
            self.session.add(row)
            await self.session.flush()

    async def record_activity(self, now: dt.datetime, every: dt.timedelta) -> None:
        """``last_user_activity`` becomes ``now`` if it is older than ``every``: one
        conditional statement, which changes nothing (and locks nothing) most times."""
        await self.session.exec(
            update(ServerSettings)
            .where(col(ServerSettings.last_user_activity) < now - every)
            .values(last_user_activity=now)
        )

    def add(self, row: ServerSettings) -> None:
        self.session.add(row)
