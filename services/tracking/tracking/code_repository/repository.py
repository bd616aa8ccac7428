"""Code repository queries and the list declaration."""

from __future__ import annotations

from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import ListSpec
from tracking.core.listing import scoped_fields, scoped_sort_keys
from tracking.core.repository import ScopedRepository
from tracking.models import CodeRepository

CODE_REPOSITORIES = ListSpec(
    resource="code_repository",
    id_column=col(CodeRepository.id),
    fields=scoped_fields(CodeRepository),
    sort_keys=scoped_sort_keys(CodeRepository),
)


class CodeRepositoryRepository(ScopedRepository[CodeRepository]):
    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, CodeRepository)
