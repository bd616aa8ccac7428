"""Snapshot queries beyond the snapshot's own row (which :mod:`tracking.pipeline` reads)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select as sa_select
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from tracking.models import StackComponent, StackComposition

ARTIFACT_STORE = "artifact_store"


class SnapshotStoreRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def artifact_store(self, stack_id: uuid.UUID) -> Any | None:
        """The stack's artifact store component, if it has one."""
        query = (
            sa_select(StackComponent)
            .join(StackComposition, col(StackComposition.component_id) == col(StackComponent.id))
            .where(
                col(StackComposition.stack_id) == stack_id,
                col(StackComponent.type) == ARTIFACT_STORE,
            )
            .limit(1)
        )
        return (await self.session.exec(query)).scalars().first()  # type: ignore[call-overload]
