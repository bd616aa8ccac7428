from __future__ import annotations

from sqlmodel.ext.asyncio.session import AsyncSession

from tracking.statistics.repository import count_all
from tracking.statistics.schemas import ServerStatistics


class StatisticsService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self) -> ServerStatistics:
        stacks, components, projects = await count_all(self.session)
        return ServerStatistics(stacks=stacks, components=components, projects=projects)
