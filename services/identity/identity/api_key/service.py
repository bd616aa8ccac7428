"""Business rules for API keys: a service account's long-lived credentials.

A key is 256 random bits (``secrets.token_hex(32)``, as the reference makes them), shown
once, encoded ``ZENKEY_<base64 of {"id", "key"}>``, in the answer of create or rotate.
Only its SHA-256 is stored (:mod:`shared.secret_hash`): a secret of that entropy needs no
password hash (ASVS 6.5.2), and a login then costs one hash instead of argon2's ~50 ms of
CPU per attempt, which a CI fleet logging in at once would queue behind.

Rotating makes a new secret; the old one keeps logging in for ``retain_period_minutes``.
A login's token carries the key (``api_key_id``) and the generation it logged in with
(``key_gen``); every change that retires tokens is written to the shared revocation list
(:meth:`RevocationList.revoke_api_key`, :meth:`RevocationList.limit_api_key`), which
every service checks: deactivating or deleting the key stops its tokens at once, rotating
stops the old generation's when the grace window ends, and reactivating restores them.

Where we differ from the reference, on purpose: a login with the retained previous key
gets a token of the previous generation (the reference stamps the current one), so it
dies with the grace window; and the secret is checked before the account's and the
key's state are told, so an answer names a key only to whoever holds it.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import uuid
from dataclasses import dataclass

from sqlmodel.ext.asyncio.session import AsyncSession

from identity.api_key.repository import APIKeyRepository
from identity.api_key.schemas import (
    APIKeyRequest,
    APIKeyRotateRequest,
    APIKeyUpdate,
)
from identity.core.auth import acting_user
from identity.models import APIKey, User
from identity.service_account.service import ServiceAccountService
from shared.auth import APIKeyRefused, EncodedKey, Principal, RevocationList
from shared.db import Clock, flush_unique, utcnow
from shared.errors import Conflict, NotFound
from shared.listing import Listing
from shared.secret_hash import digest, matches

logger = logging.getLogger("platform.audit")


class APIKeyNotFound(NotFound):
    def __init__(self, name_or_id: str, account_id: uuid.UUID) -> None:
        super().__init__(
            f"An API key with ID or name '{name_or_id}' is not configured for service "
            f"account with ID '{account_id}'."
        )


class APIKeyAlreadyExists(Conflict):
    def __init__(self, name: str, account: str, action: str = "register") -> None:
        super().__init__(
            f"Unable to {action} API key with name '{name}': Found an existing API key with "
            f"the same name configured for the same '{account}' service account."
        )


@dataclass
class NewAPIKey:
    """A key just made or rotated, and its encoded secret (to be shown once)."""

    api_key: APIKey
    account: User
    key: str


@dataclass
class LoggedIn:
    api_key: APIKey
    account: User
    generation: int


def _new_secret(api_key_id: uuid.UUID) -> tuple[str, str]:
    """The encoded key to show and the hash to store."""
    secret = secrets.token_hex(32)
    return EncodedKey(id=api_key_id, key=secret).encode(), digest(secret)


def previous_until(api_key: APIKey) -> dt.datetime | None:
    """When the previous key stops logging in, if a rotation kept it."""
    if api_key.last_rotated is None or api_key.retain_period <= 0 or api_key.key_generation < 2:
        return None
    return api_key.last_rotated + dt.timedelta(minutes=api_key.retain_period)


class APIKeyService:
    def __init__(
        self, session: AsyncSession, revocations: RevocationList, clock: Clock = utcnow
    ) -> None:
        self.repository = APIKeyRepository(session)
        self.accounts = ServiceAccountService(session, revocations, clock)
        self.revocations = revocations
        self.clock = clock

    async def _account(self, caller: Principal, account_id: uuid.UUID, action: str) -> User:
        if action == "read":
            await acting_user(self.repository.session, caller)
        else:
            await self.accounts.users.admin(caller, action)
        return await self.accounts.get(str(account_id))

    async def _key(self, account: User, name_or_id: str, *, for_update: bool = False) -> APIKey:
        api_key = await self.repository.of_account(account.id, name_or_id, for_update=for_update)
        if api_key is None:
            raise APIKeyNotFound(name_or_id, account.id)
        return api_key

    async def create_for(
        self, caller: Principal, account_id: uuid.UUID, request: APIKeyRequest
    ) -> NewAPIKey:
        account = await self._account(caller, account_id, "create API keys")
        conflict = APIKeyAlreadyExists(request.name, account.name)
        if await self.repository.of_account(account.id, request.name) is not None:
            raise conflict
        now = self.clock()
        api_key = APIKey(
            service_account_id=account.id,
            name=request.name,
            description=request.description or "",
            key_hash="",
            created=now,
            updated=now,
        )
        key, api_key.key_hash = _new_secret(api_key.id)
        self.repository.add(api_key)
        await flush_unique(self.repository.session, conflict)
        return NewAPIKey(api_key, account, key)

    async def list_for(
        self, caller: Principal, account_id: uuid.UUID, listing: Listing
    ) -> tuple[User, int, list[APIKey]]:
        account = await self._account(caller, account_id, "read")
        total, items = await self.repository.list(listing, account.id)
        return account, total, items

    async def get_for(
        self, caller: Principal, account_id: uuid.UUID, name_or_id: str
    ) -> tuple[APIKey, User]:
        account = await self._account(caller, account_id, "read")
        return await self._key(account, name_or_id), account

    async def update_for(
        self, caller: Principal, account_id: uuid.UUID, name_or_id: str, update: APIKeyUpdate
    ) -> tuple[APIKey, User]:
        account = await self._account(caller, account_id, "update API keys")
        api_key = await self._key(account, name_or_id, for_update=True)
        conflict = None
        if update.name and update.name != api_key.name:
            conflict = APIKeyAlreadyExists(update.name, account.name, "update")
            if await self.repository.of_account(account.id, update.name) is not None:
                raise conflict
            api_key.name = update.name
        if update.description is not None:
            api_key.description = update.description
        if update.active is not None and update.active != api_key.active:
            api_key.active = update.active
            await self._publish(api_key)
        api_key.updated = self.clock()
        self.repository.add(api_key)
        if conflict is not None:
            await flush_unique(self.repository.session, conflict)
        return api_key, account

    async def rotate_for(
        self,
        caller: Principal,
        account_id: uuid.UUID,
        name_or_id: str,
        request: APIKeyRotateRequest,
    ) -> NewAPIKey:
        account = await self._account(caller, account_id, "rotate API keys")
        api_key = await self._key(account, name_or_id, for_update=True)
        now = self.clock()
        api_key.previous_key_hash = api_key.key_hash
        key, api_key.key_hash = _new_secret(api_key.id)
        api_key.key_generation += 1
        api_key.retain_period = request.retain_period_minutes
        api_key.last_rotated = api_key.updated = now
        await self._publish(api_key)
        self.repository.add(api_key)
        await self.repository.session.flush()
        return NewAPIKey(api_key, account, key)

    async def delete_for(self, caller: Principal, account_id: uuid.UUID, name_or_id: str) -> None:
        account = await self._account(caller, account_id, "delete API keys")
        api_key = await self._key(account, name_or_id, for_update=True)
        await self.revocations.revoke_api_key(api_key.id)
        await self.repository.delete(api_key)
        await self.repository.session.flush()

    async def _publish(self, api_key: APIKey) -> None:
        """Tell every service which of the key's tokens still stand. Inside the
        transaction: if Redis cannot take it, the change rolls back (503)."""
        if not api_key.active:
            await self.revocations.revoke_api_key(api_key.id)
        else:
            await self.revocations.limit_api_key(
                api_key.id, api_key.key_generation, previous_until(api_key)
            )

    async def authenticate(self, key_id: uuid.UUID, secret: str) -> LoggedIn:
        """The key and account a login with ``key_id``'s ``secret`` is for, and the
        generation it logs in as; :class:`APIKeyRefused` with the reason otherwise."""
        api_key = await self.repository.get(key_id, for_update=True)
        if api_key is None:
            matches(None, secret)  # as slow as a known key
            raise APIKeyRefused(f"error retrieving API key {key_id}")
        now = self.clock()
        until = previous_until(api_key)
        current = matches(api_key.key_hash, secret)
        previous = matches(api_key.previous_key_hash, secret) and until is not None and now < until
        if not (current or previous):
            raise APIKeyRefused(
                f"could not verify key value for API key {api_key.name}", key_id=api_key.id
            )
        account = await self.accounts.repository.get(api_key.service_account_id)
        if account is None or not account.active:
            name = account.name if account else api_key.service_account_id
            raise APIKeyRefused(
                f"service account {name} associated with API key {api_key.name} is not active",
                key_id=api_key.id,
            )
        if not api_key.active:
            raise APIKeyRefused(
                f"API key {api_key.name} associated with service account {account.name} "
                "is not active",
                key_id=api_key.id,
            )
        api_key.last_login = now
        self.repository.add(api_key)
        generation = api_key.key_generation if current else api_key.key_generation - 1
        return LoggedIn(api_key, account, generation)
