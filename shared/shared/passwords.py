"""argon2id password hashing, off the event loop.

Parameters follow OWASP's first choice (m = 19 MiB, t = 2, p = 1) unless a service's
settings say otherwise (:class:`PasswordHashSettings`, applied by :func:`configure` when the
app is made: the cost is the process's). Verifying against a dummy hash of the same cost when
the user does not exist keeps failed logins equally slow either way. A hash made with other
parameters (an older cost) still verifies: argon2 reads them from the hash itself.
"""

from __future__ import annotations

import asyncio
import functools
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from pydantic import BaseModel, Field

__all__ = [
    "MIN_PASSWORD_LENGTH",
    "PasswordHashSettings",
    "announce_generated_password",
    "configure",
    "generate_password",
    "hash_password",
    "verify_password",
]

MIN_PASSWORD_LENGTH = 8


class PasswordHashSettings(BaseModel):
    """The argon2id cost, mixed into the settings of a service that stores passwords.
    Lowering it is for tests and development machines: production keeps OWASP's."""

    password_hash_memory_kib: int = Field(default=19456, ge=8)
    password_hash_iterations: int = Field(default=2, ge=1)


class _Hashing:
    """The process's hasher and its dummy hash (made on first use, at the same cost)."""

    def __init__(self, memory_kib: int, iterations: int) -> None:
        self.hasher = PasswordHasher(
            time_cost=iterations, memory_cost=memory_kib, parallelism=1, hash_len=32, salt_len=16
        )
        self._dummy: str | None = None

    @property
    def dummy(self) -> str:
        if self._dummy is None:
            self._dummy = self.hasher.hash("dummy password for timing equalisation")
        return self._dummy


@functools.cache
def _hashing_at(memory_kib: int, iterations: int) -> _Hashing:
    """One hasher per cost: switching back to a cost reuses its hasher and dummy hash."""
    return _Hashing(memory_kib, iterations)


def _hashing_for(settings: PasswordHashSettings) -> _Hashing:
    return _hashing_at(settings.password_hash_memory_kib, settings.password_hash_iterations)


_hashing = _hashing_for(PasswordHashSettings())


def configure(settings: PasswordHashSettings) -> None:
    """Hash (and equalise failed logins) at ``settings``' cost from now on."""
    global _hashing
    _hashing = _hashing_for(settings)


async def hash_password(password: str) -> str:
    return await asyncio.to_thread(_hashing.hasher.hash, password)


def _verify(password_hash: str, password: str) -> bool:
    try:
        return _hashing.hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


async def verify_password(password_hash: str | None, password: str) -> bool:
    """True when ``password`` matches; a missing hash costs the same time and fails."""
    if password_hash is None:
        await asyncio.to_thread(_verify, _hashing.dummy, password)
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
