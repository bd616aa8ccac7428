"""Secrets at rest: Fernet-encrypted under a rotatable list of keys.

A service keeps a comma-separated list of Fernet keys in one setting (``SecretStr``). The
first key encrypts; every key decrypts. A key is rotated by putting a new one in front,
re-encrypting what is stored (:meth:`SecretBox.rotate` on each value) and then dropping the
old key.
"""

from __future__ import annotations

from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from pydantic import SecretStr


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
