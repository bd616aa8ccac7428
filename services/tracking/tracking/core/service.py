"""The service base of named, project-scoped resources: reading, listing, naming and
deleting the rows of one table (its repository: :class:`ScopedRepository`)."""

from __future__ import annotations

import uuid
from typing import ClassVar, Generic

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import Listing, ListSpec
from tracking.core.errors import NameTaken, ScopedNotFound
from tracking.core.repository import ScopedRepository
from tracking.core.rows import Row, ScopedRow
from tracking.core.schemas import ScopedListQuery
from tracking.project.repository import ProjectRef
from tracking.project.scope import resolve_project_ref


class ScopedService(Generic[Row]):
    """Reading, listing, naming and deleting rows of one named, project-scoped table."""

    not_found: ClassVar[type[ScopedNotFound]] = ScopedNotFound
    name_taken: ClassVar[type[NameTaken]] = NameTaken

    def __init__(self, session: AsyncSession, repository: ScopedRepository[Row]) -> None:
        self.session = session
        self.repository = repository

    async def project(self, name_or_id: str | uuid.UUID | None) -> ProjectRef:
        """The project's id and name (404 when unknown, the default one when not named)."""
        return await resolve_project_ref(self.session, name_or_id)

    async def get_row(self, row_id: uuid.UUID) -> Row:
        row = await self.repository.get(row_id)
        if row is None:
            raise self.not_found(row_id)
        return row

    async def read_row(self, row_id: uuid.UUID) -> ScopedRow:
        row = await self.repository.read(row_id)
        if row is None:
            raise self.not_found(row_id)
        return row

    async def list_rows(
        self, spec: ListSpec, listing: Listing, query: ScopedListQuery
    ) -> tuple[int, list[ScopedRow]]:
        project = await self.project(query.project)
        return await self.repository.page(spec, listing, project.id, query.scope_user)

    async def insert(self, row: Row, project: ProjectRef) -> None:
        await self.repository.insert(row, self.name_taken(row.name, project.name))

    async def rename(self, row: Row, name: str) -> None:
        """Give ``row`` a new name (409 when another row of its project has it)."""
        if name == row.name:
            return
        project = await self.project(row.project_id)
        row.name = name
        await self.repository.save(row, self.name_taken(name, project.name, "update"))

    async def delete_row(self, row_id: uuid.UUID) -> Row:
        row = await self.get_row(row_id)
        await self.repository.delete(row)
        return row
