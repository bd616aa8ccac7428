from __future__ import annotations

import uuid

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from identity.models import User
from shared.listing import Kind, Listing, ListSpec, SortKey, base_fields, column_field, fetch_page

SERVICE_ACCOUNTS = ListSpec(
    resource="service_account",
    id_column=col(User.id),
    fields=[
        *base_fields(col(User.id), col(User.created), col(User.updated)),
        column_field("name", col(User.name), Kind.STRING),
        column_field("description", col(User.description), Kind.STRING),
        column_field("active", col(User.active), Kind.BOOL),
        column_field("external_user_id", col(User.external_user_id), Kind.UUID),
    ],
    sort_keys=[
        SortKey(name, col(getattr(User, name)))
        for name in ("created", "updated", "id", "name", "full_name", "active")
    ],
)

# Service accounts are the users rows marked so; users and accounts share one namespace
# of names (``users.name`` is unique).
IS_SERVICE_ACCOUNT = col(User.is_service_account).is_(True)


class ServiceAccountRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, account_id: uuid.UUID) -> User | None:
        account = await self.session.get(User, account_id)
        return account if account is not None and account.is_service_account else None

    async def by_name_or_id(self, name_or_id: str) -> User | None:
        try:
            return await self.get(uuid.UUID(name_or_id))
        except ValueError:
            pass
        query = select(User).where(User.name == name_or_id, IS_SERVICE_ACCOUNT)
        return (await self.session.exec(query)).first()

    def add(self, account: User) -> None:
        self.session.add(account)

    async def list(self, listing: Listing) -> tuple[int, list[User]]:
        return await fetch_page(
            self.session, SERVICE_ACCOUNTS, listing, select(User), scope=[IS_SERVICE_ACCOUNT]
        )
