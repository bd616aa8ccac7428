"""Business rules for code repositories."""

from __future__ import annotations

import uuid

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.listing import Listing
from tracking.code_repository.repository import CODE_REPOSITORIES, CodeRepositoryRepository
from tracking.code_repository.schemas import (
    CodeRepositoryListQuery,
    CodeRepositoryRequest,
    CodeRepositoryUpdate,
)
from tracking.core.errors import NameTaken, ScopedNotFound
from tracking.core.rows import ScopedRow
from tracking.core.service import ScopedService
from tracking.models import CodeRepository


class CodeRepositoryNotFound(ScopedNotFound):
    resource = "code repository"


class CodeRepositoryAlreadyExists(NameTaken):
    resource = "code repository"


class CodeRepositoryService(ScopedService[CodeRepository]):
    not_found = CodeRepositoryNotFound
    name_taken = CodeRepositoryAlreadyExists

    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, CodeRepositoryRepository(session))

    async def list_page(
        self, listing: Listing, query: CodeRepositoryListQuery
    ) -> tuple[int, list[ScopedRow]]:
        return await self.list_rows(CODE_REPOSITORIES, listing, query.scope())

    async def get(self, repository_id: uuid.UUID) -> ScopedRow:
        return await self.read_row(repository_id)

    async def create(self, request: CodeRepositoryRequest, user_id: uuid.UUID) -> CodeRepository:
        """Into ``request.project_ref()`` (a workspace path's project wins)."""
        into = await self.project(request.project_ref())
        repository = CodeRepository(
            project_id=into.id,
            name=request.name,
            config=request.config,
            source=request.source.model_dump(mode="json"),
            logo_url=request.logo_url,
            description=request.description,
            user_id=user_id,
        )
        await self.insert(repository, into)
        return repository

    async def update(
        self, repository_id: uuid.UUID, update: CodeRepositoryUpdate
    ) -> CodeRepository:
        """Fields sent and not null change. Unlike the reference, which accepts ``source``
        and drops it, a new source is stored."""
        repository = await self.get_row(repository_id)
        repository.updated = utcnow()
        if update.config is not None:
            repository.config = update.config
        if update.source is not None:
            repository.source = update.source.model_dump(mode="json")
        if update.logo_url is not None:
            repository.logo_url = update.logo_url
        if update.description is not None:
            repository.description = update.description
        if update.name:
            await self.rename(repository, update.name)
        await self.session.flush()
        return repository

    async def delete(self, repository_id: uuid.UUID) -> None:
        await self.delete_row(repository_id)
