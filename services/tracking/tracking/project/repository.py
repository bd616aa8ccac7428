from __future__ import annotations

from typing import Any

from sqlalchemy import func
from sqlmodel import SQLModel, col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import by_name_or_id
from shared.listing import (
    Kind,
    Listing,
    ListSpec,
    SortKey,
    base_fields,
    column_field,
    fetch_page,
)
from tracking.models import Project

PROJECTS = ListSpec(
    resource="project",
    id_column=col(Project.id),
    fields=[
        *base_fields(col(Project.id), col(Project.created), col(Project.updated)),
        column_field("name", col(Project.name), Kind.STRING),
        column_field("display_name", col(Project.display_name), Kind.STRING),
    ],
    sort_keys=[
        SortKey(name, col(getattr(Project, name)))
        for name in ("created", "updated", "id", "name", "display_name")
    ],
)


class ProjectRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def by_name_or_id(self, name_or_id: str) -> Project | None:
        return await by_name_or_id(self.session, Project, name_or_id)

    async def by_name(self, name: str) -> Project | None:
        return (await self.session.exec(select(Project).where(Project.name == name))).first()

    async def page(self, listing: Listing) -> tuple[int, list[Project]]:
        return await fetch_page(self.session, PROJECTS, listing, select(Project))

    def add(self, project: Project) -> None:
        self.session.add(project)

    async def contents(self, project: Project) -> dict[str, int]:
        """How many rows of each table belong to ``project`` (tables with none left out).

        Every table with a foreign key to ``projects`` counts, so a resource added later
        is covered without a change here."""
        counts: dict[str, int] = {}
        for table in SQLModel.metadata.sorted_tables:
            for key in table.foreign_keys:
                if key.column.table is Project.__table__:  # type: ignore[attr-defined]
                    query: Any = select(func.count()).select_from(table)
                    query = query.where(key.parent == project.id)
                    count = int((await self.session.exec(query)).one())
                    if count:
                        counts[table.name] = count
        return counts

    async def delete(self, project: Project) -> None:
        await self.session.delete(project)
