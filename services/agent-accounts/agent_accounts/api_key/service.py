"""API keys: issued to the caller (or, by an admin, to a service account), shown once,
stored as SHA-256 hashes, rotated with a grace window for the previous secret."""

from __future__ import annotations

import uuid

from sqlmodel.ext.asyncio.session import AsyncSession

from agent_accounts.account.service import AccountService
from agent_accounts.api_key.repository import ApiKeyAlreadyExists, ApiKeyRepository
from agent_accounts.api_key.schemas import ApiKeyRotateRequest
from agent_accounts.core.auth import AccountCaller, ensure_admin
from agent_accounts.core.credentials import encode_api_key, new_secret
from agent_accounts.core.listing import ListQuery
from agent_accounts.models import ApiKey
from agent_accounts.settings import Settings
from shared.db import Clock
from shared.errors import Forbidden, NotFound
from shared.secret_hash import digest


class ApiKeyNotFound(NotFound):
    def __init__(self, key_id: object) -> None:
        super().__init__(f"API key {key_id} was not found")


class ApiKeyService:
    def __init__(self, session: AsyncSession, settings: Settings, clock: Clock) -> None:
        self.repository = ApiKeyRepository(session)
        self.accounts = AccountService(session, settings, clock)
        self.clock = clock

    async def _visible(self, key_id: uuid.UUID, caller: AccountCaller) -> ApiKey:
        """The caller's own key, or (for an admin) a service account's key; 404 otherwise,
        so other accounts' key ids are not even confirmed."""
        key = await self.repository.get(key_id)
        if key is None:
            raise ApiKeyNotFound(key_id)
        if key.owner_id != caller.account_id:
            owner = await self.accounts.get(key.owner_id)
            if not (caller.account.is_admin and owner.is_service_account):
                raise ApiKeyNotFound(key_id)
        return key

    async def create(
        self, name: str, caller: AccountCaller, *, owner_id: uuid.UUID | None = None
    ) -> tuple[ApiKey, str]:
        """A new key and its plaintext (returned exactly once)."""
        if owner_id is not None and owner_id != caller.account_id:
            ensure_admin(caller, "api_key:create")
            owner = await self.accounts.get(owner_id)
            if not owner.is_service_account:
                raise Forbidden("Keys can be issued for service accounts only.")
        if await self.repository.by_name(name) is not None:
            raise ApiKeyAlreadyExists(name)
        secret = new_secret()
        now = self.clock()
        key = ApiKey(
            owner_id=owner_id or caller.account_id,
            created_by=caller.account_id,
            name=name,
            key_hash=digest(secret),
            created=now,
            updated=now,
        )
        key = await self.repository.add(key)
        return key, encode_api_key(key.id, secret)

    async def list(
        self, caller: AccountCaller, query: ListQuery
    ) -> tuple[list[ApiKey], str | None]:
        return await self.repository.list(caller.account_id, query)

    async def get(self, key_id: uuid.UUID, caller: AccountCaller) -> ApiKey:
        return await self._visible(key_id, caller)

    async def set_active(self, key_id: uuid.UUID, active: bool, caller: AccountCaller) -> ApiKey:
        """Deactivating also ends every session and worker token obtained with the key
        (they name it, and it is checked on each request)."""
        key = await self._visible(key_id, caller)
        key.active = active
        key.updated = self.clock()
        return await self.repository.add(key)

    async def rotate(
        self, key_id: uuid.UUID, request: ApiKeyRotateRequest, caller: AccountCaller
    ) -> tuple[ApiKey, str]:
        """A new secret; the previous one keeps working for ``retain_period_minutes``. Only
        one previous generation is kept (the row is locked, so rotations take turns)."""
        key = await self._visible(key_id, caller)
        secret = new_secret()
        now = self.clock()
        key.previous_key_hash = key.key_hash
        key.key_hash = digest(secret)
        key.retain_period_minutes = request.retain_period_minutes
        key.last_rotated = now
        key.updated = now
        key = await self.repository.add(key)
        return key, encode_api_key(key.id, secret)

    async def delete(self, key_id: uuid.UUID, caller: AccountCaller) -> None:
        await self.repository.delete(await self._visible(key_id, caller))
