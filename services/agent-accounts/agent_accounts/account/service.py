"""Accounts: users and service accounts, activation and deactivation.

Trusted-team model: every authenticated account reads everything. Only admins create
accounts, grant admin, deactivate users and update service accounts. Nobody changes their
own admin flag; service accounts are never admins; accounts are never deleted.

A password change ends every session of the account but the one that made it: the other
sessions (password, API-key and device logins), worker and task tokens, and the devices'
refresh (the devices go). An admin's reset (deactivate, then the owner activates with a
new password) ends them all. API keys stay: they are credentials the owner manages one by
one, not logins, and the workers that hold one renew their worker tokens with it.
"""

from __future__ import annotations

import uuid

from sqlmodel.ext.asyncio.session import AsyncSession

from agent_accounts.account.repository import AccountAlreadyExists, AccountRepository
from agent_accounts.account.schemas import (
    ServiceAccountCreateRequest,
    ServiceAccountUpdateRequest,
    UserActivateRequest,
    UserCreateRequest,
    UserUpdateRequest,
)
from agent_accounts.core.auth import AccountCaller, ensure_admin, token_device_id
from agent_accounts.core.credentials import new_secret
from agent_accounts.core.listing import ListQuery
from agent_accounts.core.schemas import aware_utc
from agent_accounts.device.repository import DeviceRepository
from agent_accounts.models import Account
from agent_accounts.settings import Settings
from shared.auth import VerifiedToken
from shared.db import Clock
from shared.errors import Forbidden, NotFound
from shared.passwords import generate_password, hash_password, verify_password
from shared.secret_hash import digest, matches


class AccountNotFound(NotFound):
    def __init__(self, account_id: object) -> None:
        super().__init__(f"Account {account_id} was not found")


class NotManagedHere(Forbidden):
    def __init__(self) -> None:
        super().__init__("This server does not manage its own accounts.")


class ActivationTokenIncorrect(Forbidden):
    def __init__(self) -> None:
        super().__init__("The activation token is incorrect")


class AccountService:
    def __init__(self, session: AsyncSession, settings: Settings, clock: Clock) -> None:
        self.repository = AccountRepository(session)
        self.devices = DeviceRepository(session)
        self.settings = settings
        self.clock = clock

    def _local_only(self) -> None:
        if self.settings.server_auth_scheme != "local":
            raise NotManagedHere()

    async def get(self, account_id: uuid.UUID) -> Account:
        account = await self.repository.get(account_id)
        if account is None:
            raise AccountNotFound(account_id)
        return account

    async def _user(self, account_id: uuid.UUID) -> Account:
        """A user (service accounts are not found on the /users routes), row-locked."""
        account = await self.repository.get(account_id, for_update=True)
        if account is None or account.is_service_account:
            raise AccountNotFound(account_id)
        return account

    async def _service_account(self, account_id: uuid.UUID) -> Account:
        account = await self.repository.get(account_id, for_update=True)
        if account is None or not account.is_service_account:
            raise AccountNotFound(account_id)
        return account

    async def list(self, query: ListQuery) -> tuple[list[Account], str | None]:
        return await self.repository.list(query)

    async def _end_sessions(self, account: Account, keep: VerifiedToken | None = None) -> None:
        """End every token of ``account`` issued so far (the cutoff on its row, which every
        request of every replica reads) and drop the devices it approved (their device
        codes refresh no more), but ``keep``, the session making the change, and its
        device."""
        account.tokens_valid_after = self.clock()
        account.tokens_kept_jti = keep.jti if keep is not None else None
        device = token_device_id(keep) if keep is not None else None
        await self.devices.delete_of_account(account.id, keep=device)

    def _new_activation(self, account: Account) -> str:
        token = new_secret()
        account.activation_token_hash = digest(token)
        account.activation_expires_at = self.clock() + self.settings.activation_token_lifetime
        return token

    async def create_user(
        self, request: UserCreateRequest, caller: AccountCaller
    ) -> tuple[Account, str | None]:
        """The user and, when it has no password yet, its one-time activation token."""
        self._local_only()
        ensure_admin(caller, "account:create")
        if await self.repository.by_name(request.name, service_account=False) is not None:
            raise AccountAlreadyExists(request.name)
        now = self.clock()
        account = Account(
            name=request.name,
            email=request.email,
            is_admin=request.is_admin,
            created_by=caller.account_id,
            created=now,
            updated=now,
        )
        token = None
        if request.password is not None:
            account.password_hash = await hash_password(request.password)
        else:
            account.active = False
            token = self._new_activation(account)
        return await self.repository.add(account), token

    async def update_user(
        self, account_id: uuid.UUID, request: UserUpdateRequest, caller: AccountCaller
    ) -> Account:
        account = await self._user(account_id)
        own = account.id == caller.account_id
        if (request.password is not None or request.metadata is not None) and not own:
            raise Forbidden("Only the account itself may change its password or metadata.")
        if request.password is not None:
            self._local_only()
            if request.old_password is None or not await verify_password(
                account.password_hash, request.old_password
            ):
                raise Forbidden("The old password is incorrect.")
            account.password_hash = await hash_password(request.password)
            await self._end_sessions(account, keep=caller.token)
        if request.is_admin is not None and request.is_admin != account.is_admin:
            self._local_only()
            ensure_admin(caller, "account:set_admin")
            if own:
                raise Forbidden("An account cannot change its own admin flag.")
            account.is_admin = request.is_admin
        if request.metadata is not None:
            account.account_metadata = request.metadata
        account.updated = self.clock()
        return await self.repository.add(account)

    async def activate(self, account_id: uuid.UUID, request: UserActivateRequest) -> Account:
        """No caller: the single-use, expiring activation token is the credential."""
        self._local_only()
        account = await self._user(account_id)
        expires = account.activation_expires_at
        if (
            not matches(account.activation_token_hash, request.activation_token)
            or expires is None
            or self.clock() >= aware_utc(expires)
        ):
            raise ActivationTokenIncorrect()
        # An inactive account's tokens already died with its deactivation (a new user has
        # none), so no new cutoff: one here would also kill the session the kitaru UI logs
        # in with right after, on a replica whose clock is a few milliseconds behind. Only
        # an account made active again meanwhile (the default admin, at start-up) still
        # has live tokens, and a new password ends them.
        if account.active:
            await self._end_sessions(account)
        account.password_hash = await hash_password(request.password)
        account.active = True
        account.activation_token_hash = None
        account.activation_expires_at = None
        account.updated = self.clock()
        return await self.repository.add(account)

    async def deactivate(self, account_id: uuid.UUID, caller: AccountCaller) -> tuple[Account, str]:
        """Locks the user out (its live tokens die with the cutoff, its devices go) and
        returns a fresh activation token."""
        self._local_only()
        ensure_admin(caller, "account:deactivate")
        if account_id == caller.account_id:
            raise Forbidden("An account cannot deactivate itself.")
        account = await self._user(account_id)
        account.active = False
        await self._end_sessions(account)
        account.updated = self.clock()
        token = self._new_activation(account)
        return await self.repository.add(account), token

    async def create_service_account(
        self, request: ServiceAccountCreateRequest, caller: AccountCaller
    ) -> Account:
        self._local_only()
        ensure_admin(caller, "account:create")
        if await self.repository.by_name(request.name, service_account=True) is not None:
            raise AccountAlreadyExists(request.name)
        now = self.clock()
        account = Account(
            name=request.name,
            email=request.email,
            is_service_account=True,
            created_by=caller.account_id,
            created=now,
            updated=now,
        )
        return await self.repository.add(account)

    async def update_service_account(
        self, account_id: uuid.UUID, request: ServiceAccountUpdateRequest, caller: AccountCaller
    ) -> Account:
        self._local_only()
        ensure_admin(caller, "account:update")
        account = await self._service_account(account_id)
        now = self.clock()
        if request.active is not None and request.active != account.active:
            account.active = request.active
            if not request.active:
                await self._end_sessions(account)
        if request.metadata is not None:
            account.account_metadata = request.metadata
        account.updated = now
        return await self.repository.add(account)

    async def ensure_default(self, name: str, password: str | None) -> tuple[Account, str | None]:
        """The default admin and the password generated for it, if any: created at first
        start with ``password`` or, without one, a random password returned here to be
        shown once (both are hashed only then); re-activated and made admin again if
        someone changed that."""
        account = await self.repository.by_name(name, service_account=False)
        if account is None:
            generated = None
            if not password:
                generated = password = generate_password()
            account = Account(name=name, is_admin=True, active=True)
            account.password_hash = await hash_password(password)
            return await self.repository.add(account), generated
        if not account.active or not account.is_admin:
            account.active = True
            account.is_admin = True
            account.updated = self.clock()
            await self.repository.add(account)
        return account, None
