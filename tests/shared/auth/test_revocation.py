"""The revocation list against a real Redis."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import hiredis
import pytest
from redis.asyncio import Redis

from shared.auth import RevocationList, VerifiedToken
from shared.errors import ServiceUnavailable
from shared.redis import Keys, create_redis
from tests.support.redis_server import free_port

DAY = 24 * 3600


def token(
    *,
    subject: str = "alice",
    issued_at: datetime | None = None,
    lifetime: timedelta | None = timedelta(hours=1),
    device_id: str | None = None,
) -> VerifiedToken:
    issued_at = issued_at or datetime.now(UTC)
    claims: dict[str, Any] = {"sub": subject, "kind": "access"}
    if device_id is not None:
        claims["device_id"] = device_id
    return VerifiedToken(
        raw="not-a-real-token",
        claims=claims,
        subject=subject,
        kind="access",
        jti=uuid4().hex,
        issued_at=issued_at,
        expires_at=issued_at + lifetime if lifetime else None,
        key_id="k",
    )


@pytest.fixture
def unused_port() -> int:
    return free_port()


async def test_fresh_token_is_not_revoked(revocations: RevocationList) -> None:
    assert await revocations.is_revoked(token()) is False


async def test_revoked_jti_revokes_only_that_token(revocations: RevocationList) -> None:
    revoked, other = token(), token()

    await revocations.revoke_token(revoked.jti, revoked.expires_at)

    assert await revocations.is_revoked(revoked) is True
    assert await revocations.is_revoked(other) is False


async def test_revoked_jti_entry_expires_after_the_token_plus_margin(
    revocations: RevocationList, redis_client: Redis, redis_namespace: str
) -> None:
    revoked = token(lifetime=timedelta(minutes=10))
    assert revoked.expires_at is not None

    await revocations.revoke_token(revoked.jti, revoked.expires_at)

    ttl = await redis_client.ttl(f"{redis_namespace}:revoked:jti:{revoked.jti}")
    expected = (revoked.expires_at - datetime.now(UTC)).total_seconds() + 5 * 60
    assert expected - 5 <= ttl <= expected + 1


async def test_revoked_token_without_exp_is_remembered_for_400_days(
    revocations: RevocationList, redis_client: Redis, redis_namespace: str
) -> None:
    revoked = token(lifetime=None)

    await revocations.revoke_token(revoked.jti, None)

    assert await revocations.is_revoked(revoked) is True
    ttl = await redis_client.ttl(f"{redis_namespace}:revoked:jti:{revoked.jti}")
    assert 400 * DAY - 5 <= ttl <= 400 * DAY


async def test_revoking_a_long_expired_token_writes_nothing(
    revocations: RevocationList, redis_client: Redis, redis_namespace: str
) -> None:
    expired = token(issued_at=datetime.now(UTC) - timedelta(days=2))

    await revocations.revoke_token(expired.jti, expired.expires_at)

    assert await redis_client.exists(f"{redis_namespace}:revoked:jti:{expired.jti}") == 0


async def test_subject_cutoff_revokes_tokens_issued_at_or_before_it(
    revocations: RevocationList,
) -> None:
    cutoff = datetime.now(UTC)
    before = token(issued_at=cutoff - timedelta(minutes=5))
    at = token(issued_at=cutoff)
    after = token(issued_at=cutoff + timedelta(milliseconds=1))

    await revocations.revoke_subject("alice", before=cutoff)

    assert await revocations.is_revoked(before) is True
    assert await revocations.is_revoked(at) is True
    assert await revocations.is_revoked(after) is False


async def test_token_with_whole_second_iat_in_the_cutoff_second_is_revoked(
    revocations: RevocationList,
) -> None:
    # Another issuer's integer iat cannot tell before from after: err on revoking.
    cutoff = datetime.now(UTC).replace(microsecond=500_000)
    same_second = token(issued_at=cutoff.replace(microsecond=0))

    await revocations.revoke_subject("alice", before=cutoff)

    assert await revocations.is_revoked(same_second) is True


async def test_subject_cutoff_defaults_to_now(revocations: RevocationList) -> None:
    earlier = token(issued_at=datetime.now(UTC) - timedelta(seconds=2))

    await revocations.revoke_subject("alice")

    assert await revocations.is_revoked(earlier) is True
    assert await revocations.is_revoked(token(subject="bob")) is False


async def test_subject_cutoff_never_moves_backwards(revocations: RevocationList) -> None:
    cutoff = datetime.now(UTC).replace(microsecond=0)
    revoked = token(issued_at=cutoff - timedelta(minutes=1))

    await revocations.revoke_subject("alice", before=cutoff)
    await revocations.revoke_subject("alice", before=cutoff - timedelta(hours=1))

    assert await revocations.is_revoked(revoked) is True


async def test_subject_cutoff_has_no_ttl(
    revocations: RevocationList, redis_client: Redis, redis_namespace: str
) -> None:
    await revocations.revoke_subject("alice")

    assert await redis_client.ttl(f"{redis_namespace}:revoked:subject:alice") == -1


async def test_deleted_subject_revokes_its_tokens_issued_before_and_after(
    revocations: RevocationList,
) -> None:
    deleted_at = datetime.now(UTC)

    await revocations.revoke_deleted_subject("alice")

    # Signed after the deletion: only a stolen key could have made it, and it must not stand.
    for issued_at in (deleted_at - timedelta(hours=1), deleted_at + timedelta(days=1)):
        assert await revocations.is_revoked(token(issued_at=issued_at)) is True
    assert await revocations.is_revoked(token(subject="bob")) is False


async def test_a_cutoff_never_replaces_a_deletion(
    revocations: RevocationList, redis_client: Redis, redis_namespace: str
) -> None:
    await revocations.revoke_subject("alice")
    await revocations.revoke_deleted_subject("alice")
    await revocations.revoke_subject("alice", before=datetime.now(UTC) + timedelta(hours=1))

    later = token(issued_at=datetime.now(UTC) + timedelta(days=1))
    assert await revocations.is_revoked(later) is True
    assert await redis_client.ttl(f"{redis_namespace}:revoked:subject:alice") == -1


async def test_revoked_device_revokes_its_tokens_until_restored(
    revocations: RevocationList,
) -> None:
    device_id = str(uuid4())
    on_device = token(device_id=device_id)
    elsewhere = token(device_id=str(uuid4()))

    await revocations.revoke_device(device_id)

    assert await revocations.is_revoked(on_device) is True
    assert await revocations.is_revoked(elsewhere) is False

    await revocations.restore_device(device_id)

    assert await revocations.is_revoked(on_device) is False


async def test_device_cutoff_revokes_earlier_tokens_of_that_device_only(
    revocations: RevocationList,
) -> None:
    device_id = str(uuid4())
    cutoff = datetime.now(UTC)
    before = token(device_id=device_id, issued_at=cutoff - timedelta(seconds=1))
    after = token(device_id=device_id, issued_at=cutoff + timedelta(microseconds=1))
    other_device = token(device_id=str(uuid4()), issued_at=cutoff - timedelta(seconds=1))
    same_subject_no_device = token(issued_at=cutoff - timedelta(seconds=1))

    await revocations.revoke_device_before(device_id, before=cutoff)

    assert await revocations.is_revoked(before) is True
    assert await revocations.is_revoked(after) is False
    assert await revocations.is_revoked(other_device) is False
    assert await revocations.is_revoked(same_subject_no_device) is False


async def test_restoring_a_device_keeps_its_cutoff(revocations: RevocationList) -> None:
    device_id = str(uuid4())
    old = token(device_id=device_id, issued_at=datetime.now(UTC) - timedelta(seconds=5))
    await revocations.revoke_device_before(device_id)
    await revocations.revoke_device(device_id)

    await revocations.restore_device(device_id)

    assert await revocations.is_revoked(old) is True


async def test_device_id_spelling_does_not_matter(revocations: RevocationList) -> None:
    device_id = uuid4()
    on_device = token(device_id=device_id.hex.upper())

    await revocations.revoke_device(str(device_id))

    assert await revocations.is_revoked(on_device) is True


async def test_revocation_check_is_one_mget_in_one_write(
    revocations: RevocationList, redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    await revocations.is_revoked(token())  # connects the pipe
    protocol = revocations._pipe._protocol
    assert protocol is not None
    transport = protocol.transport
    assert transport is not None
    writes: list[bytes] = []
    write = transport.write

    def recording(data: bytes) -> None:
        writes.append(bytes(data))
        write(data)

    monkeypatch.setattr(transport, "write", recording)

    await revocations.is_revoked(token(device_id=str(uuid4())))

    [written] = writes
    commands = hiredis.Reader()  # commands are written in the shape of a reply
    commands.feed(written)
    command = commands.gets()
    assert command[0] == b"MGET"
    assert len(command) == 5  # token, subject, device, device cutoff
    assert commands.gets() is False


async def test_revocation_check_fails_closed_when_redis_is_down(unused_port: int) -> None:
    redis = create_redis(f"redis://127.0.0.1:{unused_port}/0", timeout=0.5)
    revocations = RevocationList(redis, Keys("down"))
    try:
        with pytest.raises(ServiceUnavailable):
            await revocations.is_revoked(token())
    finally:
        await redis.aclose()


async def test_revoking_fails_loudly_when_redis_is_down(unused_port: int) -> None:
    redis = create_redis(f"redis://127.0.0.1:{unused_port}/0", timeout=0.5)
    revocations = RevocationList(redis, Keys("down"))
    try:
        with pytest.raises(ServiceUnavailable):
            await revocations.revoke_token("jti", None)
        with pytest.raises(ServiceUnavailable):
            await revocations.revoke_subject("alice")
        with pytest.raises(ServiceUnavailable):
            await revocations.revoke_device("device")
    finally:
        await redis.aclose()


# What the check keeps: Redis tells its connection of every change (client-side caching).


async def test_checks_of_a_token_seen_before_ask_redis_nothing(
    revocations: RevocationList,
) -> None:
    seen = token(device_id=str(uuid4()))

    for _ in range(5):
        assert await revocations.is_revoked(seen) is False

    assert revocations.reads == 1
    assert await revocations.is_revoked(token()) is False  # another token: read
    assert revocations.reads == 2


@pytest.fixture
async def elsewhere(redis_url: str, redis_namespace: str) -> AsyncIterator[RevocationList]:
    """The revocation list of another service: its own Redis client and connections."""
    client = create_redis(redis_url)
    revocations = RevocationList(client, Keys(redis_namespace))
    yield revocations
    await revocations.aclose()
    await client.aclose()


async def test_a_revocation_made_elsewhere_holds_at_the_next_check(
    revocations: RevocationList, elsewhere: RevocationList
) -> None:
    device_id = str(uuid4())
    by_jti, by_subject, by_device = token(), token(subject="bob"), token(device_id=device_id)
    by_cutoff = token(device_id=str(uuid4()), issued_at=datetime.now(UTC) - timedelta(seconds=5))
    for checked in (by_jti, by_subject, by_device, by_cutoff):
        assert await revocations.is_revoked(checked) is False  # read and kept

    await elsewhere.revoke_token(by_jti.jti, by_jti.expires_at)
    assert await revocations.is_revoked(by_jti) is True
    await elsewhere.revoke_subject("bob")
    assert await revocations.is_revoked(by_subject) is True
    await elsewhere.revoke_device(device_id)
    assert await revocations.is_revoked(by_device) is True
    await elsewhere.revoke_device_before(by_cutoff.claims["device_id"])
    assert await revocations.is_revoked(by_cutoff) is True
    # Lifted as promptly: the restored device's token works again.
    await elsewhere.restore_device(device_id)
    assert await revocations.is_revoked(by_device) is False


async def test_an_entry_written_by_any_client_is_seen_at_the_next_check(
    revocations: RevocationList, redis_client: Redis, redis_namespace: str
) -> None:
    checked = token()
    assert await revocations.is_revoked(checked) is False

    await redis_client.set(f"{redis_namespace}:revoked:jti:{checked.jti}", b"1")

    assert await revocations.is_revoked(checked) is True


async def test_losing_the_connection_forgets_what_was_kept(
    revocations: RevocationList, redis_client: Redis, elsewhere: RevocationList
) -> None:
    checked = token()
    assert await revocations.is_revoked(checked) is False
    own_id = await revocations._pipe("CLIENT", "ID")

    # Changes made while the connection is down are told to nobody.
    await redis_client.client_kill_filter(_id=own_id)
    await elsewhere.revoke_token(checked.jti, checked.expires_at)

    assert await revocations.is_revoked(checked) is True
    assert revocations.reads == 2


async def test_kept_entries_are_read_again_when_old(
    redis_client: Redis, redis_namespace: str
) -> None:
    revocations = RevocationList(redis_client, Keys(redis_namespace), max_age=0.05)
    checked = token()
    try:
        await revocations.is_revoked(checked)
        await revocations.is_revoked(checked)
        # The list's age runs on real time (it has no clock to move): far past it.
        await asyncio.sleep(0.5)
        await revocations.is_revoked(checked)
    finally:
        await revocations.aclose()
    assert revocations.reads == 2
