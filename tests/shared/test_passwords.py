"""argon2id password hashing (shared by identity and agent-accounts)."""

from __future__ import annotations

import pytest

from shared.passwords import PasswordHashSettings, configure, hash_password, verify_password


@pytest.fixture(autouse=True)
def owasp_cost() -> None:
    """The default cost, whatever an app made earlier in this process configured."""
    configure(PasswordHashSettings())


async def test_hash_is_argon2id_with_the_owasp_parameters():
    stored = await hash_password("correct horse battery staple")
    assert stored.startswith("$argon2id$")
    assert "m=19456,t=2,p=1" in stored


async def test_a_password_longer_than_72_bytes_is_not_truncated():
    long = "é" * 60  # 120 UTF-8 bytes, past bcrypt's cap
    stored = await hash_password(long)
    assert await verify_password(stored, long)
    assert not await verify_password(stored, long[:-1])


async def test_a_missing_hash_never_verifies():
    assert not await verify_password(None, "anything")


async def test_a_hash_made_at_another_cost_still_verifies():
    """Lowering or raising the cost keeps every stored password working (argon2 reads the
    cost from the hash)."""
    stored = await hash_password("correct horse battery staple")
    configure(PasswordHashSettings(password_hash_memory_kib=8, password_hash_iterations=1))
    try:
        cheap = await hash_password("correct horse battery staple")
        assert "m=8,t=1,p=1" in cheap
        assert await verify_password(stored, "correct horse battery staple")
    finally:
        configure(PasswordHashSettings())
    assert await verify_password(cheap, "correct horse battery staple")
    assert not await verify_password(cheap, "wrong horse battery staple")
