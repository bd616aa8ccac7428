from __future__ import annotations

from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute
from tracking.models import Project, Stack, StackComponent


async def count_all(session: AsyncSession) -> tuple[int, int, int]:
    """Stacks, components and projects, counted in one statement."""
    statement = sa_select(
        sa_select(func.count(col(Stack.id))).scalar_subquery(),
        sa_select(func.count(col(StackComponent.id))).scalar_subquery(),
        sa_select(func.count(col(Project.id))).scalar_subquery(),
    )
    row: tuple[int, int, int] = tuple((await core_execute(session, statement)).one())
    return row[0], row[1], row[2]
