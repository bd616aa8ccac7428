from __future__ import annotations

import datetime as dt
import uuid

from sqlmodel import col, delete, select
from sqlmodel.ext.asyncio.session import AsyncSession

from agent_accounts.core.listing import CursorSpec, ListQuery, fetch_page
from agent_accounts.models import Device
from shared.listing import Kind

DEVICES = CursorSpec(
    id_column=col(Device.id),
    fields={"id": (col(Device.id), Kind.UUID), "status": (col(Device.status), Kind.STRING)},
    sorts={
        "created": (col(Device.created), Kind.DATETIME),
        "updated": (col(Device.updated), Kind.DATETIME),
    },
)


class DeviceRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, device_id: uuid.UUID, *, for_update: bool = True) -> Device | None:
        query = select(Device).where(col(Device.id) == device_id)
        if for_update:
            query = query.with_for_update()
        return (await self.session.exec(query)).first()

    async def list(
        self, account_id: uuid.UUID, query: ListQuery
    ) -> tuple[list[Device], str | None]:
        return await fetch_page(
            self.session,
            select(Device),
            query,
            DEVICES,
            scope=[col(Device.account_id) == account_id],
        )

    async def add(self, device: Device) -> Device:
        self.session.add(device)
        await self.session.flush()
        return device

    async def delete(self, device: Device) -> None:
        await self.session.delete(device)
        await self.session.flush()

    async def delete_expired(self, now: dt.datetime) -> None:
        """Drop devices past their expiry (abandoned authorizations, expired devices)."""
        expired = col(Device.expires).is_not(None) & (col(Device.expires) <= now)
        await self.session.exec(delete(Device).where(expired))

    async def delete_of_account(self, account_id: uuid.UUID, *, keep: uuid.UUID | None) -> None:
        """Drop every device the account approved, but ``keep``."""
        owned = col(Device.account_id) == account_id
        if keep is not None:
            owned &= col(Device.id) != keep
        await self.session.exec(delete(Device).where(owned))
