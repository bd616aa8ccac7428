"""argon2id password hashing (shared by identity and agent-accounts)."""

from __future__ import annotations

from shared.passwords import hash_password, verify_password


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
