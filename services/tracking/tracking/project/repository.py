from __future__ import annotations

import uuid
from typing import Any, NamedTuple

from sqlalchemy import bindparam, case, func, or_
from sqlalchemy import select as sa_select
from sqlmodel import SQLModel, col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import by_name_or_id, core_execute
from shared.listing import (
    Kind,
    Listing,
    ListSpec,
    SortKey,
    base_fields,
    column_field,
    fetch_page,
)
from tracking.models import Pipeline, PipelineRunCount, Project

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


# A project's runs (parameter ``project_id``), kept by triggers (migration 0012): the home
# page's count and the unfiltered runs list's total, the same at any number of runs.
RUN_COUNT = sa_select(func.coalesce(func.sum(col(PipelineRunCount.runs)), 0)).where(
    col(PipelineRunCount.project_id) == bindparam("project_id")
)


class ProjectRef(NamedTuple):
    """What most requests need of a project."""

    id: uuid.UUID
    name: str


# Built once, run with new values (no statement building per request).
_REF_COLUMNS = sa_select(col(Project.id), col(Project.name))
_REF_BY_NAME = _REF_COLUMNS.where(col(Project.name) == bindparam("name"))
_BY_ID = col(Project.id) == bindparam("id", type_=Project.__table__.c.id.type)  # type: ignore[attr-defined]
_REF_BY_ID_OR_NAME = (
    _REF_COLUMNS.where(or_(_BY_ID, col(Project.name) == bindparam("name")))
    .order_by(case((_BY_ID, 0), else_=1))
    .limit(1)
)


class ProjectRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def by_name_or_id(self, name_or_id: str) -> Project | None:
        return await by_name_or_id(self.session, Project, name_or_id)

    async def ref(self, name_or_id: str) -> ProjectRef | None:
        """:meth:`by_name_or_id`'s id and name in one Core query (an id match wins)."""
        params: dict[str, Any]
        try:
            project_id = uuid.UUID(name_or_id)
        except ValueError:
            query, params = _REF_BY_NAME, {"name": name_or_id}
        else:
            query, params = _REF_BY_ID_OR_NAME, {"id": project_id, "name": name_or_id}
        row = (await core_execute(self.session, query, params)).first()
        return ProjectRef(row.id, row.name) if row is not None else None

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

    async def statistics(self, project_id: uuid.UUID) -> tuple[int, int]:
        """The project's numbers of pipelines (counted in their unique index) and of runs
        (:data:`RUN_COUNT`), in one query."""
        pipelines = (
            sa_select(func.count())
            .select_from(Pipeline)
            .where(col(Pipeline.project_id) == bindparam("project_id"))
            .scalar_subquery()
        )
        query = sa_select(pipelines.label("pipelines"), RUN_COUNT.scalar_subquery().label("runs"))
        row = (await core_execute(self.session, query, {"project_id": project_id})).one()
        return int(row.pipelines), int(row.runs)
