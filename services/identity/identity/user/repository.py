from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from typing import Any

from sqlalchemy import func
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from identity.models import User

SORTABLE = {"created", "updated", "name", "full_name", "email", "active", "id"}


class UserRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, user_id: uuid.UUID) -> User | None:
        return await self.session.get(User, user_id)

    async def by_name(self, name: str) -> User | None:
        return (await self.session.exec(select(User).where(User.name == name))).first()

    async def by_name_or_id(self, name_or_id: str) -> User | None:
        try:
            user = await self.get(uuid.UUID(name_or_id))
        except ValueError:
            user = None
        return user or await self.by_name(name_or_id)

    async def count_admins(self) -> int:
        query = select(func.count()).select_from(User).where(col(User.is_admin), col(User.active))
        return int((await self.session.exec(query)).one())

    async def page(
        self,
        filters: Mapping[str, Any],
        *,
        sort: str,
        descending: bool,
        offset: int,
        limit: int,
        ids: Collection[uuid.UUID] | None = None,
    ) -> tuple[int, list[User]]:
        conditions = [getattr(User, name) == value for name, value in filters.items()]
        if ids is not None:
            conditions.append(col(User.id).in_(list(ids)))
        total_query = select(func.count()).select_from(User).where(*conditions)
        total = int((await self.session.exec(total_query)).one())
        column = col(getattr(User, sort))
        order = [column.desc(), col(User.id).desc()] if descending else [column, col(User.id)]
        query = select(User).where(*conditions).order_by(*order).offset(offset).limit(limit)
        return total, list((await self.session.exec(query)).all())

    def add(self, user: User) -> None:
        self.session.add(user)

    async def delete(self, user: User) -> None:
        await self.session.delete(user)
