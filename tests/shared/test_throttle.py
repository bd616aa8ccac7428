"""The login throttle's counters, lockouts and known addresses, against a real Redis."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic_settings import SettingsConfigDict
from redis.asyncio import Redis

from shared.errors import ServiceUnavailable
from shared.redis import Keys, create_redis
from shared.settings import ServiceSettings
from shared.throttle import LoginThrottle, LoginThrottled, LoginThrottleSettings
from tests.support.redis_server import free_port


@pytest.fixture
def settings() -> LoginThrottleSettings:
    return LoginThrottleSettings(
        login_account_failure_threshold=3,
        login_client_failure_threshold=5,
        login_account_failure_ceiling=8,
        login_lockout_base=timedelta(seconds=10),
        login_account_lockout_max=timedelta(seconds=60),
        login_client_lockout_max=timedelta(seconds=300),
    )


@pytest.fixture
def throttle(
    redis_client: Redis, redis_namespace: str, settings: LoginThrottleSettings
) -> LoginThrottle:
    return LoginThrottle(redis_client, Keys(redis_namespace), settings)


async def lockout_s(redis: Redis, throttle: LoginThrottle, scope: str, name: str) -> int:
    """The lockout's remaining seconds, rounded (-2: none)."""
    ms = int(await redis.pttl(throttle.lockout_key(scope, name)))
    return ms if ms < 0 else round(ms / 1000)


async def test_no_lockout_below_the_threshold(throttle: LoginThrottle):
    for _ in range(2):
        await throttle.failed("alice", "10.0.0.1")
    await throttle.check("alice", "10.0.0.1")


async def test_the_threshold_th_failure_locks_the_account_with_retry_after(
    throttle: LoginThrottle,
):
    for index in range(3):
        await throttle.failed("alice", f"10.0.0.{index}")
    with pytest.raises(LoginThrottled) as raised:
        await throttle.check("alice", "10.0.0.9")
    assert raised.value.status_code == 429
    assert 9 <= int(raised.value.headers["Retry-After"]) <= 10


async def test_account_lockout_doubles_up_to_its_short_maximum(
    throttle: LoginThrottle, redis_client: Redis
):
    seen = []
    for _ in range(7):
        await throttle.failed("alice", None)
        seen.append(await lockout_s(redis_client, throttle, "account", "alice"))
    # No lockout before the threshold, then 10 s, 20 s, 40 s, capped at 60 s.
    assert seen == [-2, -2, 10, 20, 40, 60, 60]


async def test_client_lockout_doubles_up_to_its_long_maximum(
    throttle: LoginThrottle, redis_client: Redis
):
    seen = []
    for index in range(11):
        await throttle.failed(f"user{index}", "10.0.0.9")
        seen.append(await lockout_s(redis_client, throttle, "client", "10.0.0.9"))
    assert seen == [-2, -2, -2, -2, 10, 20, 40, 80, 160, 300, 300]


async def test_the_ceiling_locks_the_account_until_its_failures_are_forgotten(
    throttle: LoginThrottle, redis_client: Redis, settings: LoginThrottleSettings
):
    for _ in range(8):
        await throttle.failed("alice", None)
    memory = settings.login_failure_memory.total_seconds()
    assert memory - 2 <= await lockout_s(redis_client, throttle, "account", "alice") <= memory


async def test_clear_lifts_the_accounts_lockout_and_forgets_its_failures_not_the_addresses(
    throttle: LoginThrottle, redis_client: Redis
):
    for index in range(8):  # up to the ceiling, from several addresses
        await throttle.failed("alice", f"10.0.0.{index % 2}")
    for _ in range(5):
        await throttle.failed("bob", "10.0.0.9")

    await throttle.clear("alice")

    await throttle.check("alice", "10.0.0.5")
    assert await redis_client.exists(throttle.failures_key("account", "alice")) == 0
    await throttle.failed("alice", None)  # counts from 1 again: no lockout
    await throttle.check("alice", None)
    with pytest.raises(LoginThrottled):  # an address's lockout is its own
        await throttle.check("alice", "10.0.0.9")


async def test_the_address_threshold_bites_before_the_accounts_by_default():
    defaults = LoginThrottleSettings()
    assert defaults.login_client_failure_threshold < defaults.login_account_failure_threshold
    assert defaults.login_account_lockout_max < defaults.login_client_lockout_max
    assert defaults.login_account_failure_ceiling <= 100


async def test_failures_from_one_address_lock_it_for_every_account(throttle: LoginThrottle):
    for name in ("a", "b", "c", "d", "e"):
        await throttle.failed(name, "10.0.0.9")
    with pytest.raises(LoginThrottled):
        await throttle.check("someone-else", "10.0.0.9")
    await throttle.check("someone-else", "10.0.0.10")


async def test_an_attempt_naming_no_account_counts_against_the_address(throttle: LoginThrottle):
    for _ in range(5):
        await throttle.failed(None, "10.0.0.9")
    with pytest.raises(LoginThrottled):
        await throttle.check(None, "10.0.0.9")
    with pytest.raises(LoginThrottled):
        await throttle.check("alice", "10.0.0.9")


async def test_success_clears_the_account_but_not_the_address(throttle: LoginThrottle):
    for name in ("alice", "alice", "b", "c"):
        await throttle.failed(name, "10.0.0.9")
    await throttle.succeeded("alice", "10.0.0.9")
    await throttle.failed("alice", "10.0.0.9")  # the address's fifth failure
    with pytest.raises(LoginThrottled):
        await throttle.check("alice", "10.0.0.9")
    await throttle.check("alice", "10.0.0.8")  # the account itself has one failure only


async def test_a_locked_account_still_logs_in_from_an_address_it_is_known_at(
    throttle: LoginThrottle,
):
    await throttle.succeeded("alice", "10.0.0.1")
    for index in range(3):
        await throttle.failed("alice", f"192.0.2.{index}")  # an attacker elsewhere
    with pytest.raises(LoginThrottled):
        await throttle.check("alice", "10.0.0.2")
    await throttle.check("alice", "10.0.0.1")
    # Known to alice, not to bob.
    for index in range(3):
        await throttle.failed("bob", f"192.0.2.{index}")
    with pytest.raises(LoginThrottled):
        await throttle.check("bob", "10.0.0.1")


async def test_a_known_address_is_still_held_by_its_own_lockout(throttle: LoginThrottle):
    await throttle.succeeded("alice", "10.0.0.1")
    for _ in range(5):
        await throttle.failed("alice", "10.0.0.1")
    with pytest.raises(LoginThrottled):
        await throttle.check("alice", "10.0.0.1")


async def test_failure_counts_are_forgotten_after_the_memory(
    throttle: LoginThrottle, redis_client: Redis, settings: LoginThrottleSettings
):
    await throttle.failed("alice", "10.0.0.1")
    for key in (
        throttle.failures_key("account", "alice"),
        throttle.failures_key("client", "10.0.0.1"),
    ):
        ttl = await redis_client.ttl(key)
        assert 0 < ttl <= settings.login_failure_memory.total_seconds()


async def test_account_names_are_not_stored_in_clear(
    throttle: LoginThrottle, redis_client: Redis, redis_namespace: str
):
    await throttle.failed("secret-name", "10.0.0.1")
    await throttle.succeeded("secret-name", "10.0.0.1")
    keys = [k.decode() async for k in redis_client.scan_iter(match=f"{redis_namespace}:login:*")]
    assert keys
    assert all("secret-name" not in k for k in keys)


async def test_each_namespace_counts_alone(
    redis_client: Redis, redis_namespace: str, settings: LoginThrottleSettings
):
    platform = LoginThrottle(redis_client, Keys(f"{redis_namespace}:platform"), settings)
    agent = LoginThrottle(redis_client, Keys(f"{redis_namespace}:agent"), settings)
    for _ in range(3):
        await platform.failed("alice", None)
    with pytest.raises(LoginThrottled):
        await platform.check("alice", None)
    await agent.check("alice", None)


async def test_throttle_fails_closed_when_redis_is_down(settings: LoginThrottleSettings):
    dead = create_redis(f"redis://127.0.0.1:{free_port()}/0", timeout=0.5)
    throttle = LoginThrottle(dead, Keys("x"), settings)
    try:
        with pytest.raises(ServiceUnavailable):
            await throttle.check("alice", "10.0.0.1")
        with pytest.raises(ServiceUnavailable):
            await throttle.failed("alice", "10.0.0.1")
        with pytest.raises(ServiceUnavailable):
            await throttle.succeeded("alice", "10.0.0.1")
    finally:
        await dead.aclose()


class PrefixedSettings(ServiceSettings, LoginThrottleSettings):
    model_config = SettingsConfigDict(env_prefix="SERVICE_")


def test_the_settings_mix_into_a_services_settings_with_its_prefix(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("SERVICE_LOGIN_ACCOUNT_LOCKOUT_MAX", "PT30S")
    monkeypatch.setenv("SERVICE_LOGIN_CLIENT_FAILURE_THRESHOLD", "4")
    settings = PrefixedSettings()
    assert settings.login_account_lockout_max == timedelta(seconds=30)
    assert settings.login_client_failure_threshold == 4
