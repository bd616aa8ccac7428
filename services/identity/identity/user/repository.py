from __future__ import annotations

import uuid

from sqlalchemy import func
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from identity.models import User
from shared.db import by_name_or_id
from shared.listing import Kind, Listing, ListSpec, SortKey, base_fields, column_field, fetch_page

USERS = ListSpec(
    resource="user",
    id_column=col(User.id),
    fields=[
        *base_fields(col(User.id), col(User.created), col(User.updated)),
        column_field("name", col(User.name), Kind.STRING),
        column_field("full_name", col(User.full_name), Kind.STRING),
        column_field("email", col(User.email), Kind.STRING),
        column_field("active", col(User.active), Kind.BOOL),
        column_field(
            "email_opted_in",
            col(User.email_opted_in),
            Kind.BOOL,
            description="Whether the user has opted in to emails",
        ),
        column_field(
            "external_user_id",
            col(User.external_user_id),
            Kind.UUID,
            description="The external user ID associated with the account",
        ),
    ],
    sort_keys=[
        SortKey(name, col(getattr(User, name)))
        for name in ("created", "updated", "id", "name", "full_name", "email", "active")
    ],
)


class UserRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, user_id: uuid.UUID) -> User | None:
        return await self.session.get(User, user_id)

    async def by_name(self, name: str) -> User | None:
        return (await self.session.exec(select(User).where(User.name == name))).first()

    async def by_name_or_id(self, name_or_id: str) -> User | None:
        return await by_name_or_id(self.session, User, name_or_id)

    async def count_admins(self) -> int:
        query = select(func.count()).select_from(User).where(col(User.is_admin), col(User.active))
        return int((await self.session.exec(query)).one())

    async def lock_active_admins(self) -> list[uuid.UUID]:
        """The ids of the active admins, their rows locked until the transaction ends.

        Two transactions that each take an admin away (say two admins deactivating each
        other) then run one after the other, and the second sees what the first did.
        """
        query = (
            select(User.id)
            .where(col(User.is_admin), col(User.active))
            .order_by(col(User.id))
            .with_for_update()
        )
        return list((await self.session.exec(query)).all())

    def add(self, user: User) -> None:
        self.session.add(user)

    async def delete(self, user: User) -> None:
        await self.session.delete(user)

    async def list(
        self, listing: Listing, *, service_accounts: bool = False
    ) -> tuple[int, list[User]]:
        scope = [] if service_accounts else [col(User.is_service_account).is_(False)]
        return await fetch_page(self.session, USERS, listing, select(User), scope=scope)
