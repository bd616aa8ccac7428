from __future__ import annotations

import datetime as dt

from sqlalchemy import or_
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from identity.models import SigningKey


class SigningKeyRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def newest(self) -> SigningKey | None:
        """The most recent key, whether or not it signs yet."""
        query = select(SigningKey).order_by(col(SigningKey.created).desc()).limit(1)
        return (await self.session.exec(query)).first()

    async def signing(self, now: dt.datetime) -> SigningKey | None:
        """The newest key whose activation time has come."""
        query = (
            select(SigningKey)
            .where(col(SigningKey.activates_at) <= now)
            .order_by(col(SigningKey.activates_at).desc(), col(SigningKey.created).desc())
            .limit(1)
        )
        return (await self.session.exec(query)).first()

    async def verifying(self, now: dt.datetime) -> list[SigningKey]:
        """Keys still in the verification set (not past their retention)."""
        query = (
            select(SigningKey)
            .where(or_(col(SigningKey.expires_at).is_(None), col(SigningKey.expires_at) > now))
            .order_by(col(SigningKey.created).desc())
        )
        return list((await self.session.exec(query)).all())

    async def all(self) -> list[SigningKey]:
        return list((await self.session.exec(select(SigningKey))).all())

    def add(self, key: SigningKey) -> None:
        self.session.add(key)
