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
from collections.abc import Mapping, Sequence
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
from tracking.secret.schemas import SecretReference, SecretRequest, SecretUpdate

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


class UnresolvedReference(NotFound):
    """A configuration's ``{{name.key}}`` that its owner's secrets do not answer (the
    reference's wording; the available keys are left out, the secret being another
    user's when the caller is not the component's owner)."""

    def __init__(self, field: str, reference: SecretReference, *, secret_found: bool) -> None:
        cause = (
            f"The secret {reference.name} does not contain a value for key {reference.key}."
            if secret_found
            else f"The secret {reference.name} does not exist."
        )
        super().__init__(f"Failed to resolve secret reference for attribute {field}: {cause}")


def _as_id(ref: uuid.UUID | str) -> uuid.UUID | str:
    """A reference as the reference reads it: an id when it parses as one, else a name."""
    if isinstance(ref, str):
        try:
            return uuid.UUID(ref)
        except ValueError:
            return ref
    return ref


def _by_name(rows: Sequence[Any]) -> dict[str, Any]:
    """Rows by name, a private one (the viewer's own) before a public one of the same
    name, as the reference's client looks a name up."""
    found: dict[str, Any] = {}
    for row in sorted(rows, key=lambda row: not row.private):
        found.setdefault(row.name, row)
    return found


class SecretLookup:
    """Secrets as other domains name them (a component's or a stack's ``secrets``, a
    configuration's ``{{name.key}}``), always as a given user sees them: another user's
    private secret is answered as missing, exactly as one that does not exist."""

    def __init__(self, session: AsyncSession) -> None:
        self.repository = SecretRepository(session)

    async def ids(
        self, refs: Sequence[uuid.UUID | str], viewer: uuid.UUID | None
    ) -> list[uuid.UUID]:
        """The ids of the secrets ``refs`` name (an id, else a name), in order, without
        repeats (404 for the first one ``viewer`` cannot see)."""
        refs = [_as_id(ref) for ref in refs]
        ids = [ref for ref in refs if isinstance(ref, uuid.UUID)]
        names = [ref for ref in refs if isinstance(ref, str)]
        rows = await self.repository.visible_named(ids, names, viewer)
        by_id, by_name = {row.id: row for row in rows}, _by_name(rows)
        found: list[uuid.UUID] = []
        for ref in refs:
            row = by_id.get(ref) if isinstance(ref, uuid.UUID) else by_name.get(ref)
            if row is None:
                raise SecretNotFound(ref)
            found.append(row.id)
        return list(dict.fromkeys(found))

    async def relinked(
        self,
        linked: Sequence[str],
        add: Sequence[uuid.UUID | str] | None,
        remove: Sequence[uuid.UUID | str] | None,
        viewer: uuid.UUID | None,
    ) -> list[str]:
        """A resource's linked secret ids (``linked``, as stored) after an update's
        ``add_secrets`` and ``remove_secrets`` (each must name a secret ``viewer`` sees;
        adding a linked one or removing an unlinked one changes nothing)."""
        added = await self.ids(add or [], viewer)
        removed = {str(i) for i in await self.ids(remove or [], viewer)}
        kept = [*linked, *(str(i) for i in added)]
        return [i for i in dict.fromkeys(kept) if i not in removed]

    async def shown(
        self, linked: Sequence[Sequence[str]], viewer: uuid.UUID | None
    ) -> list[list[uuid.UUID]]:
        """Each resource's linked secrets as ``viewer`` sees them: another user's private
        secret, or one deleted since, left out (one query for all)."""
        every = {uuid.UUID(i) for ids in linked for i in ids}
        visible = await self.repository.visible_among(sorted(every), viewer)
        return [[uuid.UUID(i) for i in ids if uuid.UUID(i) in visible] for ids in linked]

    async def referenced(
        self, references: Mapping[str, SecretReference], viewer: uuid.UUID | None
    ) -> dict[str, Any]:
        """The secrets (rows with their encrypted values) that ``references`` name, by
        name, as ``viewer`` sees them (one query)."""
        names = sorted({reference.name for reference in references.values()})
        return _by_name(await self.repository.visible_named([], names, viewer))


def resolve_references(
    references: Mapping[str, SecretReference], secrets: Mapping[str, Any], cipher: SecretCipher
) -> dict[str, str]:
    """Each referencing field's value, from ``secrets`` (what
    :meth:`SecretLookup.referenced` found): 404 for a missing secret or key."""
    opened: dict[uuid.UUID, dict[str, str]] = {}
    resolved = {}
    for field, reference in references.items():
        row = secrets.get(reference.name)
        if row is None:
            raise UnresolvedReference(field, reference, secret_found=False)
        if row.id not in opened:
            opened[row.id] = cipher.open(row.id, row.encrypted_values)
        value = opened[row.id].get(reference.key)
        if value is None:
            raise UnresolvedReference(field, reference, secret_found=True)
        resolved[field] = value
    return resolved


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
