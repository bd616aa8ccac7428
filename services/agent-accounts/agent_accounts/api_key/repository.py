from __future__ import annotations

import uuid

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from agent_accounts.core.listing import CursorSpec, ListQuery, fetch_page
from agent_accounts.models import ApiKey
from shared.errors import Conflict
from shared.listing import Kind

API_KEYS = CursorSpec(
    id_column=col(ApiKey.id),
    fields={"id": (col(ApiKey.id), Kind.UUID), "name": (col(ApiKey.name), Kind.STRING)},
    sorts={
        "created": (col(ApiKey.created), Kind.DATETIME),
        "updated": (col(ApiKey.updated), Kind.DATETIME),
        "name": (col(ApiKey.name), Kind.STRING),
    },
)


class ApiKeyAlreadyExists(Conflict):
    def __init__(self, name: str) -> None:
        super().__init__(f"API key {name} already exists")


class ApiKeyRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, key_id: uuid.UUID) -> ApiKey | None:
        query = select(ApiKey).where(col(ApiKey.id) == key_id).with_for_update()
        return (await self.session.exec(query)).first()

    async def by_name(self, name: str) -> ApiKey | None:
        return (await self.session.exec(select(ApiKey).where(col(ApiKey.name) == name))).first()

    async def list(self, owner_id: uuid.UUID, query: ListQuery) -> tuple[list[ApiKey], str | None]:
        return await fetch_page(
            self.session, select(ApiKey), query, API_KEYS, scope=[col(ApiKey.owner_id) == owner_id]
        )

    async def add(self, key: ApiKey) -> ApiKey:
        self.session.add(key)
        try:
            await self.session.flush()
        except IntegrityError:  # a concurrent create won the name
            raise ApiKeyAlreadyExists(key.name) from None
        return key

    async def delete(self, key: ApiKey) -> None:
        await self.session.delete(key)
        await self.session.flush()
