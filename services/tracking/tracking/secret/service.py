"""Business rules for secrets: who sees which, unique names per scope, values sealed at
rest, and the reference's backup and restore operations.

Visibility follows the reference: a private secret exists only for its owner, on every
route (admins included); a public one is every user's to read, change and delete. Only the
owner may change whether a secret is private. Values are one Fernet token per secret (keys
from COMPONENT_SECRET_KEYS), decrypted only for the answers that carry them: a get, a
create, an update. No error message, log line or metric here ever holds a value.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.auth import Principal, ensure_admin
from shared.db import utcnow
from shared.errors import BadRequest, Conflict, Forbidden, NotFound, PlatformError
from shared.listing import Listing
from shared.secret_box import SecretBox, SecretUnreadable
from tracking.models import Secret
from tracking.secret.repository import SecretRepository
from tracking.secret.schemas import SecretRequest, SecretUpdate

MAX_VALUES_BYTES = 64 * 1024
"""The reference's limit on a secret's keys and values together (UTF-8 bytes)."""


class SecretNotFound(NotFound):
    def __init__(self, secret_id: object) -> None:
        super().__init__(
            f"Secret with name or ID {secret_id} not found or is private and not owned by "
            "the current user."
        )


class SecretAlreadyExists(Conflict):
    def __init__(self, name: str, private: bool, owner: str) -> None:
        scope = "private" if private else "public"
        message = f"Found an existing {scope} secret with the same '{name}' name"
        super().__init__(message + (f" for the same '{owner}' user" if private else ""))


class PrivateStatusOwnerOnly(Forbidden):
    def __init__(self) -> None:
        super().__init__(
            "Only the user who created the secret is allowed to update its private status."
        )


class ValuesTooLarge(BadRequest):
    def __init__(self) -> None:
        super().__init__(
            f"The secret's keys and values together exceed {MAX_VALUES_BYTES // 1024} KiB "
            "of UTF-8: split them over several secrets, or keep large data in an artifact "
            "store."
        )


class NotImplementedHere(PlatformError):
    status_code = 501
    wire_name = "NotImplementedError"


class SecretsStoreNotConfigured(NotImplementedHere):
    def __init__(self) -> None:
        super().__init__(
            "No secrets store is configured: this server stores secrets encrypted with "
            "COMPONENT_SECRET_KEYS, which is not set."
        )


class NoBackupStore(NotImplementedHere):
    def __init__(self, operation: str) -> None:
        super().__init__(f"Unable to {operation} secrets: No backup secrets store is configured.")


class SecretValuesUnreadable(PlatformError):
    """Stored values no configured key decrypts (a key dropped too early): the operator's
    to fix, so a 500 that names the secret, never its values."""

    def __init__(self, secret_id: uuid.UUID) -> None:
        super().__init__(
            f"The values of secret {secret_id} cannot be decrypted with "
            "COMPONENT_SECRET_KEYS: was a key dropped before `python -m tracking.reencrypt` "
            "ran?"
        )


@dataclass(frozen=True)
class SecretCipher:
    """Seals a secret's values into one token and opens it again (``box`` ``None``: the
    server has no keys, and no secrets store)."""

    box: SecretBox | None

    def _box(self) -> SecretBox:
        if self.box is None:
            raise SecretsStoreNotConfigured()
        return self.box

    def check(self) -> None:
        """501 when the server has no keys."""
        self._box()

    def seal(self, values: dict[str, str]) -> str:
        size = sum(len(k.encode()) + len(v.encode()) for k, v in values.items())
        if size > MAX_VALUES_BYTES:
            raise ValuesTooLarge()
        return self._box().encrypt(json.dumps(values, separators=(",", ":")))

    def open(self, secret_id: uuid.UUID, sealed: str) -> dict[str, str]:
        try:
            values: dict[str, str] = json.loads(self._box().decrypt(sealed))
        except SecretUnreadable:
            raise SecretValuesUnreadable(secret_id) from None
        return values

    def reseal(self, owner_id: uuid.UUID, sealed: str) -> str | None:
        """``sealed`` again under the first key (``None``: already under it, or no keys);
        ``owner_id`` names the row in the error when no key opens it."""
        if self.box is None:
            return None
        try:
            return self.box.rotate(sealed)
        except SecretUnreadable:
            raise SecretValuesUnreadable(owner_id) from None

    def rotate(self, secret: Secret) -> bool:
        """Re-encrypt the secret's values under the first key; whether they changed."""
        again = self.reseal(secret.id, secret.encrypted_values)
        if again is None:
            return False
        secret.encrypted_values = again
        return True


def _owner_id(caller: Principal) -> uuid.UUID:
    if caller.user_id is None:  # the handlers let only users' tokens through
        raise Forbidden("This token does not belong to a user.")
    return caller.user_id


def _hidden(secret: Any, caller: Principal) -> bool:
    """Whether ``secret`` (a row or an instance) is another user's private secret."""
    return bool(secret.private) and secret.user_id != caller.user_id


def _merged(stored: dict[str, str], sent: dict[str, str | None], patch: bool) -> dict[str, str]:
    """The values after an update: ``patch`` merges (a null removes its key), otherwise
    the values sent replace the stored ones (nulls dropped)."""
    if not patch:
        return {k: v for k, v in sent.items() if v is not None}
    merged = dict(stored)
    for key, value in sent.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


Revealed = tuple[Any, dict[str, str]]
"""A secret (a row or an instance, to render) and its values in clear."""


class SecretService:
    def __init__(self, session: AsyncSession, cipher: SecretCipher) -> None:
        self.repository = SecretRepository(session)
        self.cipher = cipher

    async def _visible(self, secret_id: uuid.UUID, caller: Principal, *, lock: bool) -> Secret:
        secret = await self.repository.get(secret_id, lock=lock)
        if secret is None or _hidden(secret, caller):
            raise SecretNotFound(secret_id)
        return secret

    async def list_page(self, listing: Listing, caller: Principal) -> tuple[int, Sequence[Any]]:
        self.cipher.check()
        return await self.repository.page(listing, _owner_id(caller))

    async def get(self, secret_id: uuid.UUID, caller: Principal) -> Revealed:
        self.cipher.check()
        row = await self.repository.read(secret_id)
        if row is None or _hidden(row, caller):
            raise SecretNotFound(secret_id)
        return row, self.cipher.open(row.id, row.encrypted_values)

    async def create(self, request: SecretRequest, caller: Principal) -> Revealed:
        values = request.secret_values()
        secret = Secret(
            name=request.name,
            private=request.private,
            encrypted_values=self.cipher.seal(values),
            user_id=_owner_id(caller),
        )
        await self.repository.add(
            secret, SecretAlreadyExists(secret.name, secret.private, caller.display_name)
        )
        return secret, values

    async def update(
        self, secret_id: uuid.UUID, update: SecretUpdate, patch: bool, caller: Principal
    ) -> Revealed:
        self.cipher.check()
        secret = await self._visible(secret_id, caller, lock=True)
        if update.private is not None and secret.user_id != caller.user_id:
            raise PrivateStatusOwnerOnly()
        values = self.cipher.open(secret.id, secret.encrypted_values)
        if update.values is not None:
            values = _merged(values, update.values, patch)
            secret.encrypted_values = self.cipher.seal(values)
        if update.name is not None:
            secret.name = update.name
        if update.private is not None:
            secret.private = update.private
        secret.updated = utcnow()
        # A private secret is its caller's own (no one else reaches it), so the clash's
        # owner is the caller.
        clash = SecretAlreadyExists(secret.name, secret.private, caller.display_name)
        await self.repository.add(secret, clash)
        return secret, values

    async def delete(self, secret_id: uuid.UUID, caller: Principal) -> None:
        self.cipher.check()
        await self.repository.delete(await self._visible(secret_id, caller, lock=False))


def backup_secrets(caller: Principal) -> None:
    """The reference copies every secret's values into a second, backup secrets store;
    this server has one store, its database (whose own backups hold the values,
    encrypted), so an admin gets the reference's answer for a server without a backup
    store."""
    ensure_admin(caller, "perform `backup secrets`")
    raise NoBackupStore("backup")


def restore_secrets(caller: Principal) -> None:
    """See :func:`backup_secrets`."""
    ensure_admin(caller, "perform `restore secrets`")
    raise NoBackupStore("restore")
