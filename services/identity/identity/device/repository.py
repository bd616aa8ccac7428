from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import delete, or_, update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from identity.models import DeviceStatus, OAuthDevice, User
from shared.listing import (
    Kind,
    Listing,
    ListSpec,
    SortKey,
    base_fields,
    column_field,
    fetch_page,
    name_or_id,
)

DEVICES = ListSpec(
    resource="o_auth_device",
    id_column=col(OAuthDevice.id),
    fields=[
        *base_fields(col(OAuthDevice.id), col(OAuthDevice.created), col(OAuthDevice.updated)),
        name_or_id(
            "user",
            col(OAuthDevice.user_id),
            target_id=col(User.id),
            target_names=[col(User.name)],
            description="Name or ID of the device's user",
        ),
        column_field("expires", col(OAuthDevice.expires), Kind.DATETIME),
        column_field("client_id", col(OAuthDevice.client_id), Kind.UUID),
        column_field("status", col(OAuthDevice.status), Kind.ENUM, enum=DeviceStatus),
        column_field("trusted_device", col(OAuthDevice.trusted_device), Kind.BOOL),
        column_field("failed_auth_attempts", col(OAuthDevice.failed_auth_attempts), Kind.INT),
        column_field("last_login", col(OAuthDevice.last_login), Kind.DATETIME),
    ],
    sort_keys=[
        SortKey(name, col(getattr(OAuthDevice, name)))
        for name in (
            "created",
            "updated",
            "id",
            "expires",
            "client_id",
            "status",
            "trusted_device",
            "failed_auth_attempts",
            "last_login",
        )
    ],
)


class DeviceRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, device_id: uuid.UUID, *, for_update: bool = False) -> OAuthDevice | None:
        query = select(OAuthDevice).where(OAuthDevice.id == device_id)
        if for_update:
            # Failure counters and single redemption: concurrent requests take turns.
            query = query.with_for_update()
        return (await self.session.exec(query)).first()

    async def by_client_id(
        self, client_id: uuid.UUID, *, for_update: bool = False
    ) -> OAuthDevice | None:
        query = select(OAuthDevice).where(OAuthDevice.client_id == client_id)
        if for_update:
            query = query.with_for_update()
        return (await self.session.exec(query)).first()

    async def user(self, user_id: uuid.UUID | None) -> User | None:
        return await self.session.get(User, user_id) if user_id is not None else None

    async def users(self, user_ids: set[uuid.UUID]) -> dict[uuid.UUID, User]:
        if not user_ids:
            return {}
        rows = await self.session.exec(select(User).where(col(User.id).in_(user_ids)))
        return {user.id: user for user in rows}

    async def delete_expired(self, now: dt.datetime) -> None:
        expired = col(OAuthDevice.expires).is_not(None) & (col(OAuthDevice.expires) < now)
        await self.session.exec(delete(OAuthDevice).where(expired))

    async def touch(self, device_id: uuid.UUID, now: dt.datetime, precision: dt.timedelta) -> None:
        """Set ``last_login`` to ``now`` unless it is less than ``precision`` old."""
        last = col(OAuthDevice.last_login)
        statement = (
            update(OAuthDevice)
            .where(col(OAuthDevice.id) == device_id)
            .where(or_(last.is_(None), last < now - precision))
            .values(last_login=now)
        )
        await self.session.exec(statement)

    def add(self, device: OAuthDevice) -> None:
        self.session.add(device)

    async def delete(self, device: OAuthDevice) -> None:
        await self.session.delete(device)

    async def list(self, listing: Listing, user_id: uuid.UUID) -> tuple[int, list[OAuthDevice]]:
        return await fetch_page(
            self.session,
            DEVICES,
            listing,
            select(OAuthDevice),
            scope=[col(OAuthDevice.user_id) == user_id],
        )
