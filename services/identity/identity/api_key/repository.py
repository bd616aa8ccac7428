from __future__ import annotations

import uuid

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from identity.models import APIKey
from shared.listing import Kind, Listing, ListSpec, SortKey, base_fields, column_field, fetch_page

API_KEYS = ListSpec(
    resource="api_key",
    id_column=col(APIKey.id),
    fields=[
        *base_fields(col(APIKey.id), col(APIKey.created), col(APIKey.updated)),
        column_field("name", col(APIKey.name), Kind.STRING),
        column_field("description", col(APIKey.description), Kind.STRING),
        column_field("active", col(APIKey.active), Kind.BOOL),
        column_field("last_login", col(APIKey.last_login), Kind.DATETIME),
        column_field("last_rotated", col(APIKey.last_rotated), Kind.DATETIME),
    ],
    sort_keys=[
        SortKey(name, col(getattr(APIKey, name)))
        for name in ("created", "updated", "id", "name", "active", "last_login", "last_rotated")
    ],
)


class APIKeyRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, api_key_id: uuid.UUID, *, for_update: bool = False) -> APIKey | None:
        query = select(APIKey).where(APIKey.id == api_key_id)
        if for_update:
            # Rotations and logins of one key take turns (a login never checks a half-
            # rotated key, nor writes last_login over a rotation).
            query = query.with_for_update()
        return (await self.session.exec(query)).first()

    async def of_account(
        self, account_id: uuid.UUID, name_or_id: str, *, for_update: bool = False
    ) -> APIKey | None:
        """The account's key with this id (when ``name_or_id`` reads as one) or name."""
        try:
            match = col(APIKey.id) == uuid.UUID(name_or_id)
        except ValueError:
            match = col(APIKey.name) == name_or_id
        query = select(APIKey).where(match, APIKey.service_account_id == account_id)
        if for_update:
            query = query.with_for_update()
        return (await self.session.exec(query)).first()

    def add(self, api_key: APIKey) -> None:
        self.session.add(api_key)

    async def delete(self, api_key: APIKey) -> None:
        await self.session.delete(api_key)

    async def list(self, listing: Listing, account_id: uuid.UUID) -> tuple[int, list[APIKey]]:
        return await fetch_page(
            self.session,
            API_KEYS,
            listing,
            select(APIKey),
            scope=[col(APIKey.service_account_id) == account_id],
        )
