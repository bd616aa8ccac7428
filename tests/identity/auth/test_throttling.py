"""Brute-force protection of the password and device-code grants: 429 with Retry-After, per
account (or device) and per client address, shared by every replica; failures equally slow
for unknown users."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest

from identity.app import create_app
from identity.settings import Settings
from shared.passwords import PasswordHashSettings
from tests.identity.conftest import ADMIN, ADMIN_PASSWORD, make_settings
from tests.identity.device.support import authorize, poll, verify
from tests.support.asgi import LifespanApp, client_at, running
from tests.support.timing import cpu_time_ratio


@pytest.fixture
def identity_settings(database_url: str, redis_url: str, redis_namespace: str) -> Settings:
    return make_settings(
        database_url,
        redis_url,
        redis_namespace,
        login_account_failure_threshold=3,
        login_client_failure_threshold=6,
        login_lockout_base=timedelta(seconds=1),
    )


async def attempt(client: httpx.AsyncClient, username: str, password: str) -> httpx.Response:
    response = await client.post("/api/v1/login", data={"username": username, "password": password})
    client.cookies.clear()
    return response


def assert_throttled(response: httpx.Response) -> None:
    assert response.status_code == 429, response.text
    assert int(response.headers["retry-after"]) >= 1
    assert response.json()["detail"].startswith("Too many failed login attempts.")


async def test_account_is_locked_out_after_the_threshold_even_for_the_right_password(
    identity: httpx.AsyncClient,
):
    for _ in range(3):
        assert (await attempt(identity, ADMIN, "wrong")).status_code == 401
    assert_throttled(await attempt(identity, ADMIN, ADMIN_PASSWORD))


async def test_unknown_account_is_throttled_the_same_way(identity: httpx.AsyncClient):
    for _ in range(3):
        assert (await attempt(identity, "ghost", "wrong")).status_code == 401
    assert_throttled(await attempt(identity, "ghost", "wrong"))


async def test_account_lockout_holds_across_client_addresses(identity_app: LifespanApp):
    for index in range(3):
        async with client_at(identity_app, f"10.0.0.{index}") as client:
            await attempt(client, ADMIN, "wrong")
    async with client_at(identity_app, "10.0.0.99") as client:
        assert_throttled(await attempt(client, ADMIN, ADMIN_PASSWORD))


async def test_one_address_guessing_many_accounts_is_locked_out(identity_app: LifespanApp):
    async with client_at(identity_app, "10.9.9.9") as client:
        for index in range(6):
            await attempt(client, f"user{index}", "wrong")
        assert_throttled(await attempt(client, ADMIN, ADMIN_PASSWORD))
    async with client_at(identity_app, "10.9.9.10") as other:
        assert (await attempt(other, ADMIN, ADMIN_PASSWORD)).status_code == 200


async def test_the_user_can_log_in_after_the_cool_down(identity: httpx.AsyncClient):
    for _ in range(3):
        await attempt(identity, ADMIN, "wrong")
    throttled = await attempt(identity, ADMIN, ADMIN_PASSWORD)
    assert_throttled(throttled)
    # The lockout is a Redis key's expiry, on Redis's clock: try until it has lapsed.
    async with asyncio.timeout(int(throttled.headers["retry-after"]) + 10):
        response = await attempt(identity, ADMIN, ADMIN_PASSWORD)
        while response.status_code == 429:
            await asyncio.sleep(0.1)
            response = await attempt(identity, ADMIN, ADMIN_PASSWORD)
    assert response.status_code == 200


async def test_a_successful_login_resets_the_accounts_failures(identity: httpx.AsyncClient):
    for _ in range(2):
        await attempt(identity, ADMIN, "wrong")
    assert (await attempt(identity, ADMIN, ADMIN_PASSWORD)).status_code == 200
    for _ in range(2):
        await attempt(identity, ADMIN, "wrong")
    assert (await attempt(identity, ADMIN, ADMIN_PASSWORD)).status_code == 200


@pytest.fixture
async def second_replica(identity_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """Another identity process on the same database and Redis."""
    async with (
        running(create_app(identity_settings)) as app,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://testserver"
        ) as client,
    ):
        yield client


async def test_lockout_is_shared_by_every_replica(
    identity: httpx.AsyncClient, second_replica: httpx.AsyncClient
):
    for _ in range(3):
        await attempt(identity, ADMIN, "wrong")
    assert_throttled(await attempt(second_replica, ADMIN, ADMIN_PASSWORD))


async def test_failed_logins_take_the_same_time_whether_or_not_the_user_exists(
    database_url: str, redis_url: str, redis_namespace: str
):
    # At production's argon2 cost, the side channel this closes: at the tests' least cost a
    # hash is ~0.1 ms, too little beside a request's own work to show whether it ran, and
    # that work's noise on a loaded machine moved the ratio past its bounds.
    settings = make_settings(
        database_url,
        redis_url,
        redis_namespace,
        login_account_failure_threshold=1000,
        login_client_failure_threshold=1000,
        **PasswordHashSettings().model_dump(),
    )

    async with running(create_app(settings)) as app, client_at(app, "10.1.1.1") as client:

        async def failed_as(username: str) -> None:
            assert (await attempt(client, username, "wrong password")).status_code == 401

        ratio = await cpu_time_ratio(
            lambda: failed_as("nobody-by-this-name"), lambda: failed_as(ADMIN)
        )
    assert 0.8 < ratio < 1.25, ratio


async def test_a_locked_account_logs_in_from_an_address_it_logged_in_from_before(
    identity_app: LifespanApp,
):
    async with client_at(identity_app, "10.5.5.5") as home:
        assert (await attempt(home, ADMIN, ADMIN_PASSWORD)).status_code == 200
    for index in range(3):
        async with client_at(identity_app, f"192.0.2.{index}") as attacker:
            await attempt(attacker, ADMIN, "wrong")
    async with client_at(identity_app, "10.5.5.6") as elsewhere:
        assert_throttled(await attempt(elsewhere, ADMIN, ADMIN_PASSWORD))
    async with client_at(identity_app, "10.5.5.5") as home:
        assert (await attempt(home, ADMIN, ADMIN_PASSWORD)).status_code == 200


async def test_device_code_polling_is_throttled_per_address(identity_app: LifespanApp):
    async with client_at(identity_app, "10.7.7.7") as client:
        # A pending device's own polls do not count...
        authorization = await authorize(client)
        for _ in range(7):
            pending = await poll(client, authorization["client_id"], authorization["device_code"])
            assert pending.json()["error"] in ("authorization_pending", "slow_down")
        # ...wrong codes and unknown clients do.
        for _ in range(3):
            assert (await poll(client, authorization["client_id"], "0" * 64)).status_code == 400
        for _ in range(3):
            assert (await poll(client, uuid.uuid4(), "0" * 64)).status_code == 400
        assert_throttled(await poll(client, uuid.uuid4(), "0" * 64))
        assert_throttled(await attempt(client, ADMIN, ADMIN_PASSWORD))


async def test_polls_of_a_device_already_redeemed_do_not_count(identity_app: LifespanApp):
    """A client polling on with its right code is told the code was used (invalid_grant,
    as for a wrong code): not a guess, so not a failure."""
    async with client_at(identity_app, "10.8.8.8") as client:
        authorization = await authorize(client)
        token = (await attempt(client, ADMIN, ADMIN_PASSWORD)).json()["access_token"]
        assert (await verify(client, token, authorization)).status_code == 200
        client_id, code = authorization["client_id"], authorization["device_code"]
        assert (await poll(client, client_id, code)).status_code == 200
        for _ in range(7):  # past the device's threshold (3) and the address's (6)
            again = await poll(client, client_id, code)
            assert again.status_code == 400, again.text
            assert again.json()["error_description"] == "The device code has already been used."
        assert (await attempt(client, ADMIN, ADMIN_PASSWORD)).status_code == 200
