"""The login throttle's counters and lockouts, against a real Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from redis.asyncio import Redis

from identity.settings import Settings
from identity.throttle.service import LoginThrottle, LoginThrottled
from shared.errors import ServiceUnavailable
from shared.redis import Keys, create_redis
from tests.identity.conftest import make_settings
from tests.support.redis_server import free_port


@pytest.fixture
def settings(redis_url: str, redis_namespace: str) -> Settings:
    return make_settings(
        "sqlite+aiosqlite:///unused.db",
        redis_url,
        redis_namespace,
        login_account_failure_threshold=3,
        login_client_failure_threshold=5,
        login_lockout_base=timedelta(seconds=10),
        login_lockout_max=timedelta(seconds=60),
    )


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Redis]:
    client = create_redis(redis_url)
    yield client
    await client.aclose()


@pytest.fixture
def throttle(redis: Redis, settings: Settings) -> LoginThrottle:
    return LoginThrottle(redis, Keys(settings.redis_namespace), settings)


async def lockout_ms(redis: Redis, throttle: LoginThrottle, username: str) -> int:
    key = throttle._pairs(username, None)[0][1]
    return int(await redis.pttl(key))


async def test_no_lockout_below_the_threshold(throttle: LoginThrottle):
    for _ in range(2):
        await throttle.failed("alice", "10.0.0.1")
    await throttle.check("alice", "10.0.0.1")


async def test_the_threshold_th_failure_locks_the_account_with_retry_after(
    throttle: LoginThrottle,
):
    for _ in range(3):
        await throttle.failed("alice", "10.0.0.1")
    with pytest.raises(LoginThrottled) as raised:
        await throttle.check("alice", "10.0.0.2")
    assert raised.value.status_code == 429
    assert 9 <= int(raised.value.headers["Retry-After"]) <= 10


async def test_lockout_doubles_with_every_further_failure_up_to_the_maximum(
    throttle: LoginThrottle, redis: Redis
):
    seen = []
    for _ in range(6):
        await throttle.failed("alice", None)
        seen.append(await lockout_ms(redis, throttle, "alice"))
    # No lockout (-2: no key) before the threshold, then 10 s, 20 s, 40 s, capped at 60 s.
    assert seen[:2] == [-2, -2]
    assert [round(ms / 1000) for ms in seen[2:]] == [10, 20, 40, 60]


async def test_failures_from_one_address_lock_it_for_every_account(throttle: LoginThrottle):
    for name in ("a", "b", "c", "d", "e"):
        await throttle.failed(name, "10.0.0.9")
    with pytest.raises(LoginThrottled):
        await throttle.check("someone-else", "10.0.0.9")
    await throttle.check("someone-else", "10.0.0.10")


async def test_success_clears_the_account_but_not_the_address(throttle: LoginThrottle):
    for name in ("alice", "alice", "b", "c"):
        await throttle.failed(name, "10.0.0.9")
    await throttle.succeeded("alice")
    await throttle.failed("alice", "10.0.0.9")  # the address's fifth failure
    with pytest.raises(LoginThrottled):
        await throttle.check("alice", "10.0.0.9")
    await throttle.check("alice", "10.0.0.8")  # the account itself has one failure only


async def test_failure_counts_are_forgotten_after_the_memory(
    throttle: LoginThrottle, redis: Redis, settings: Settings
):
    await throttle.failed("alice", None)
    key = throttle._pairs("alice", None)[0][0]
    ttl = await redis.ttl(key)
    assert 0 < ttl <= settings.login_failure_memory.total_seconds()


async def test_user_names_are_not_stored_in_clear(
    throttle: LoginThrottle, redis: Redis, settings: Settings
):
    await throttle.failed("secret-name", None)
    pattern = f"{settings.redis_namespace}:login:*"
    keys = [k.decode() async for k in redis.scan_iter(match=pattern)]
    assert keys
    assert all("secret-name" not in k for k in keys)


async def test_throttle_fails_closed_when_redis_is_down(settings: Settings):
    dead = create_redis(f"redis://127.0.0.1:{free_port()}/0", timeout=0.5)
    throttle = LoginThrottle(dead, Keys("x"), settings)
    try:
        with pytest.raises(ServiceUnavailable):
            await throttle.check("alice", "10.0.0.1")
        with pytest.raises(ServiceUnavailable):
            await throttle.failed("alice", "10.0.0.1")
    finally:
        await dead.aclose()
