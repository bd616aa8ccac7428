"""argon2id password hashing, off the event loop.

Parameters follow OWASP's first choice (m = 19 MiB, t = 2, p = 1). Verifying against a
dummy hash when the user does not exist keeps failed logins equally slow either way.
"""

from __future__ import annotations

import asyncio
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

__all__ = [
    "MIN_PASSWORD_LENGTH",
    "announce_generated_password",
    "generate_password",
    "hash_password",
    "verify_password",
]

_hasher = PasswordHasher(time_cost=2, memory_cost=19456, parallelism=1, hash_len=32, salt_len=16)
_DUMMY_HASH = _hasher.hash("dummy password for timing equalisation")

MIN_PASSWORD_LENGTH = 8


async def hash_password(password: str) -> str:
    return await asyncio.to_thread(_hasher.hash, password)


def _verify(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


async def verify_password(password_hash: str | None, password: str) -> bool:
    """True when ``password`` matches; a missing hash costs the same time and fails."""
    if password_hash is None:
        await asyncio.to_thread(_verify, _DUMMY_HASH, password)
        return False
    return await asyncio.to_thread(_verify, password_hash, password)


def generate_password() -> str:
    """A random first password (24 URL-safe characters) for an account created at start."""
    return secrets.token_urlsafe(18)


def announce_generated_password(what: str, name: str, password: str) -> None:
    """Print a generated first password once, at creation, on the process's output: it is
    stored only as a hash, so this line is the only place it can be read."""
    print(  # noqa: T201
        f"\n  Created the first {what} '{name}' with the generated password: {password}"
        "\n  Change it after logging in.\n",
        flush=True,
    )
