"""Business rules for service accounts: the users rows marked ``is_service_account``,
which log in with their API keys only.

Any user's token may read them; only an admin creates, updates or deletes them (the
reference without RBAC). Deactivating or deleting an account revokes every token it holds,
on every service (the subject's entry in the shared revocation list, as for a user), and
its API keys stop logging in.
"""

from __future__ import annotations

from sqlmodel.ext.asyncio.session import AsyncSession

from identity.core.auth import acting_user
from identity.models import User
from identity.service_account.repository import ServiceAccountRepository
from identity.service_account.schemas import ServiceAccountRequest, ServiceAccountUpdate
from identity.user.service import UserService
from shared.auth import Principal, RevocationList
from shared.db import Clock, flush_unique, utcnow
from shared.errors import Conflict, NotFound
from shared.listing import Listing


class ServiceAccountNotFound(NotFound):
    def __init__(self, name_or_id: object) -> None:
        super().__init__(f"No service account with the '{name_or_id}' name or ID was found")


class ServiceAccountAlreadyExists(Conflict):
    def __init__(self, name: str, action: str = "create") -> None:
        super().__init__(
            f"Unable to {action} service account with name '{name}': Found an existing "
            "account with this name."
        )


class ServiceAccountService:
    def __init__(
        self, session: AsyncSession, revocations: RevocationList, clock: Clock = utcnow
    ) -> None:
        self.repository = ServiceAccountRepository(session)
        self.users = UserService(session, revocations, clock)
        self.revocations = revocations
        self.clock = clock

    async def get(self, name_or_id: str) -> User:
        account = await self.repository.by_name_or_id(name_or_id)
        if account is None:
            raise ServiceAccountNotFound(name_or_id)
        return account

    async def get_for(self, caller: Principal, name_or_id: str) -> User:
        await acting_user(self.repository.session, caller)
        return await self.get(name_or_id)

    async def list_for(self, caller: Principal, listing: Listing) -> tuple[int, list[User]]:
        await acting_user(self.repository.session, caller)
        return await self.repository.list(listing)

    async def create_for(self, caller: Principal, request: ServiceAccountRequest) -> User:
        await self.users.admin(caller, "create service accounts")
        conflict = ServiceAccountAlreadyExists(request.name)
        if await self.users.repository.by_name(request.name) is not None:
            raise conflict
        now = self.clock()
        account = User(
            created=now,
            updated=now,
            name=request.name,
            full_name=request.full_name,
            description=request.description or "",
            active=request.active,
            avatar_url=request.avatar_url,
            is_service_account=True,
            email_opted_in=False,
        )
        self.repository.add(account)
        await flush_unique(self.repository.session, conflict)
        return account

    async def update_for(
        self, caller: Principal, name_or_id: str, update: ServiceAccountUpdate
    ) -> User:
        await self.users.admin(caller, "update service accounts")
        account = await self.get(name_or_id)
        conflict = None
        if update.name and update.name != account.name:
            conflict = ServiceAccountAlreadyExists(update.name, "update")
            if await self.users.repository.by_name(update.name) is not None:
                raise conflict
            account.name = update.name
        if update.full_name is not None:
            account.full_name = update.full_name
        if update.description is not None:
            account.description = update.description
        if "avatar_url" in update.model_fields_set:
            account.avatar_url = update.avatar_url
        if update.active is not None and update.active != account.active:
            account.active = update.active
            if not account.active:
                await self.revocations.revoke_subject(str(account.id), before=self.clock())
        account.updated = self.clock()
        self.repository.add(account)
        if conflict is not None:
            await flush_unique(self.repository.session, conflict)
        return account

    async def delete_for(self, caller: Principal, name_or_id: str) -> None:
        """Delete the account and, with it (a cascade), its API keys."""
        await self.users.admin(caller, "delete service accounts")
        await self.users.remove(await self.get(name_or_id))
