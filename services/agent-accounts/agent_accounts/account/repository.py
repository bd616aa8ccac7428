from __future__ import annotations

import uuid

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from agent_accounts.core.listing import CursorSpec, ListQuery, fetch_page
from agent_accounts.models import Account
from shared.errors import Conflict
from shared.listing import Kind

ACCOUNTS = CursorSpec(
    id_column=col(Account.id),
    fields={
        "id": (col(Account.id), Kind.UUID),
        "name": (col(Account.name), Kind.STRING),
        "active": (col(Account.active), Kind.BOOL),
        "is_service_account": (col(Account.is_service_account), Kind.BOOL),
    },
    sorts={
        "created": (col(Account.created), Kind.DATETIME),
        "updated": (col(Account.updated), Kind.DATETIME),
        "name": (col(Account.name), Kind.STRING),
    },
)


class AccountRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, account_id: uuid.UUID, *, for_update: bool = False) -> Account | None:
        query = select(Account).where(col(Account.id) == account_id)
        if for_update:
            query = query.with_for_update()
        return (await self.session.exec(query)).first()

    async def by_name(self, name: str, *, service_account: bool) -> Account | None:
        query = select(Account).where(
            col(Account.name) == name, col(Account.is_service_account) == service_account
        )
        return (await self.session.exec(query)).first()

    async def list(self, query: ListQuery) -> tuple[list[Account], str | None]:
        return await fetch_page(self.session, select(Account), query, ACCOUNTS)

    async def add(self, account: Account) -> Account:
        self.session.add(account)
        try:
            await self.session.flush()
        except IntegrityError:  # a concurrent create won the name
            raise AccountAlreadyExists(account.name) from None
        return account


class AccountAlreadyExists(Conflict):
    def __init__(self, name: str) -> None:
        super().__init__(f"Account {name} already exists")
