"""Secrets at rest: Fernet-encrypted under a rotatable list of keys.

A service keeps a comma-separated list of Fernet keys in one setting (``SecretStr``). The
first key encrypts; every key decrypts. A key is rotated by putting a new one in front,
re-encrypting what is stored (:meth:`SecretBox.rotate` on each value) and then dropping the
old key.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, TypeVar

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from pydantic import SecretStr
from sqlmodel import SQLModel, col, select

from shared.db import SessionMaker, session_scope

__all__ = ["SecretBox", "SecretUnreadable", "reencrypt_rows"]

Row = TypeVar("Row", bound=SQLModel)


class SecretUnreadable(ValueError):
    """No configured key decrypts a stored secret (a key was dropped too early)."""


class SecretBox:
    """Encrypts and decrypts short text secrets under a key list (see the module)."""

    def __init__(self, keys: SecretStr) -> None:
        parts = [k.strip() for k in keys.get_secret_value().split(",") if k.strip()]
        if not parts:
            raise ValueError("at least one Fernet key is required")
        try:
            fernets = [Fernet(k.encode()) for k in parts]
        except (ValueError, TypeError):
            raise ValueError("each key must be a url-safe base64 32-byte Fernet key") from None
        self._first, self._fernet = fernets[0], MultiFernet(fernets)
        # Decrypting costs more than most of what reads a secret; ciphertexts are
        # immutable, so a small cache of recent ones is safe.
        self._decrypt = lru_cache(maxsize=4096)(self._decrypt_uncached)

    @property
    def cipher(self) -> MultiFernet:
        """The key list itself, for another store of secrets under the same keys (the
        idempotency records of answers that carry secrets)."""
        return self._fernet

    def encrypt(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode()

    def decrypt(self, ciphertext: str) -> str:
        """The plaintext; :class:`SecretUnreadable` when no key decrypts it."""
        return self._decrypt(ciphertext)

    def _decrypt_uncached(self, ciphertext: str) -> str:
        try:
            return self._fernet.decrypt(ciphertext.encode()).decode()
        except InvalidToken:
            raise SecretUnreadable("no configured key decrypts the stored secret") from None

    def rotate(self, ciphertext: str) -> str | None:
        """The same secret encrypted under the first key; ``None`` when it already is."""
        try:
            self._first.decrypt(ciphertext.encode())
        except InvalidToken:
            pass
        else:
            return None
        try:
            return self._fernet.rotate(ciphertext.encode()).decode()
        except InvalidToken:
            raise SecretUnreadable("no configured key decrypts the stored secret") from None


async def reencrypt_rows(
    sessionmaker: SessionMaker, model: type[Row], rewrite: Callable[[Row], bool]
) -> int:
    """Pass every row of ``model`` to ``rewrite`` (which re-encrypts its secrets under the
    first key and says whether it changed any), each row locked in its own short
    transaction; the number rewritten. Idempotent: a second run rewrites nothing."""
    key: Any = model.id  # type: ignore[attr-defined]  # every model here has an id
    async with session_scope(sessionmaker) as session:
        ids = list((await session.exec(select(key).order_by(col(key)))).all())
    rewritten = 0
    for row_id in ids:
        async with session_scope(sessionmaker) as session:
            row = await session.get(model, row_id, with_for_update=True)
            if row is not None and rewrite(row):
                session.add(row)
                rewritten += 1
    return rewritten
