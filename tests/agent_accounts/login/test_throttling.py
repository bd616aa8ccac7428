"""Brute-force protection of ``/login``: the password, api-key and device-code grants
answer 429 with ``Retry-After`` past the limits, per account (user name, key id, device
id) and per client address, shared by every replica; unknown names count alike.

The default thresholds are the shipped ones; the lockout's base is raised so that a
lockout outlasts the test instead of expiring on a slow machine."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from agent_accounts.app import create_app
from agent_accounts.core.credentials import encode_api_key
from agent_accounts.settings import Settings
from shared.passwords import PasswordHashSettings
from shared.throttle import LoginThrottleSettings
from tests.agent_accounts.conftest import ADMIN, ADMIN_PASSWORD, Clock, NewKey, bearer
from tests.support.asgi import LifespanApp, client_at, running
from tests.support.timing import cpu_time_ratio

DEFAULTS = LoginThrottleSettings()
PER_ADDRESS = DEFAULTS.login_client_failure_threshold
PER_ACCOUNT = DEFAULTS.login_account_failure_threshold
DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"login_lockout_base": timedelta(minutes=1)}


@pytest.fixture
async def app(agent_settings: Settings, clock: Clock) -> AsyncIterator[LifespanApp]:
    async with running(create_app(agent_settings, clock=clock)) as app:
        yield app


async def password(client: httpx.AsyncClient, username: str, secret: str) -> httpx.Response:
    form = {"grant_type": "password", "username": username, "password": secret}
    return await client.post("/api/v1/login", data=form)


async def api_key(client: httpx.AsyncClient, key: str) -> httpx.Response:
    return await client.post("/api/v1/login", data={"grant_type": "api-key"}, headers=bearer(key))


async def device_poll(client: httpx.AsyncClient, device_id: str, code: str) -> httpx.Response:
    form = {"grant_type": DEVICE_CODE, "device_id": device_id, "device_code": code}
    return await client.post("/api/v1/login", data=form)


def assert_throttled(response: httpx.Response) -> None:
    assert response.status_code == 429, response.text
    assert int(response.headers["retry-after"]) >= 1
    assert response.json() == {
        "detail": "Too many failed login attempts. "
        f"Try again in {response.headers['retry-after']} seconds."
    }


def forged_key(key: dict[str, Any]) -> str:
    """A well-formed key naming a real key's id, with a wrong secret."""
    return encode_api_key(uuid.UUID(key["id"]), "0" * 64)


async def test_200_wrong_passwords_from_one_address_get_429_past_its_limit(app: LifespanApp):
    async with client_at(app, "192.0.2.1") as attacker:
        answers = [await password(attacker, ADMIN, f"guess {n}") for n in range(200)]
        right = await password(attacker, ADMIN, ADMIN_PASSWORD)
    assert [a.status_code for a in answers[:PER_ADDRESS]] == [401] * PER_ADDRESS
    for answer in answers[PER_ADDRESS:]:
        assert_throttled(answer)
    assert_throttled(right)  # the address is locked out, whatever it sends
    # The address's limit bit first: the account itself is not locked.
    async with client_at(app, "198.51.100.7") as user:
        assert (await password(user, ADMIN, ADMIN_PASSWORD)).status_code == 200


async def test_unknown_names_are_throttled_alike(app: LifespanApp):
    async with client_at(app, "192.0.2.2") as attacker:
        answers = [await password(attacker, "nobody", "guess") for _ in range(PER_ADDRESS + 1)]
    assert Counter(a.status_code for a in answers) == {401: PER_ADDRESS, 429: 1}
    assert answers[0].json() == {"detail": "Invalid username or password."}


async def test_an_account_guessed_at_from_many_addresses_is_locked_briefly(app: LifespanApp):
    for n in range(PER_ACCOUNT):
        async with client_at(app, f"192.0.2.{n}") as attacker:
            assert (await password(attacker, ADMIN, "wrong")).status_code == 401
    async with client_at(app, "198.51.100.7") as user:
        refused = await password(user, ADMIN, ADMIN_PASSWORD)
    assert_throttled(refused)
    assert int(refused.headers["retry-after"]) <= 60


async def test_a_locked_account_logs_in_from_an_address_it_logged_in_from_before(
    app: LifespanApp,
):
    async with client_at(app, "198.51.100.7") as home:
        assert (await password(home, ADMIN, ADMIN_PASSWORD)).status_code == 200
    for n in range(PER_ACCOUNT):
        async with client_at(app, f"192.0.2.{n}") as attacker:
            await password(attacker, ADMIN, "wrong")
    async with client_at(app, "198.51.100.8") as elsewhere:
        assert_throttled(await password(elsewhere, ADMIN, ADMIN_PASSWORD))
    async with client_at(app, "198.51.100.7") as home:
        assert (await password(home, ADMIN, ADMIN_PASSWORD)).status_code == 200


async def test_the_lockout_is_shared_by_two_replicas(
    app: LifespanApp, agent_settings: Settings, clock: Clock
):
    async with client_at(app, "192.0.2.3") as attacker:
        for _ in range(PER_ADDRESS):
            assert (await password(attacker, ADMIN, "wrong")).status_code == 401
    async with (
        running(create_app(agent_settings, clock=clock)) as replica,
        client_at(replica, "192.0.2.3") as attacker,
    ):
        assert_throttled(await password(attacker, ADMIN, ADMIN_PASSWORD))


async def test_api_key_login_is_throttled_per_address(
    app: LifespanApp, client: httpx.AsyncClient, new_key: NewKey
):
    key = await new_key()
    async with client_at(app, "192.0.2.4") as attacker:
        answers = [await api_key(attacker, forged_key(key)) for _ in range(PER_ADDRESS)]
        assert {a.status_code for a in answers} == {401}
        assert_throttled(await api_key(attacker, key["key"]))
        assert_throttled(await api_key(attacker, "SVCKEY_not-even-a-key"))
    async with client_at(app, "198.51.100.9") as worker:
        assert (await api_key(worker, key["key"])).status_code == 200


async def test_api_key_login_is_throttled_per_key(
    app: LifespanApp, client: httpx.AsyncClient, new_key: NewKey
):
    key = await new_key()
    for n in range(PER_ACCOUNT):
        async with client_at(app, f"192.0.2.{n}") as attacker:
            assert (await api_key(attacker, forged_key(key))).status_code == 401
    async with client_at(app, "198.51.100.9") as worker:
        assert_throttled(await api_key(worker, key["key"]))


async def test_device_code_polling_is_throttled(app: LifespanApp):
    async with client_at(app, "192.0.2.5") as attacker:
        answers = [
            await device_poll(attacker, str(uuid.uuid4()), "0" * 64) for _ in range(PER_ADDRESS)
        ]
        assert {a.json()["error"] for a in answers} == {"invalid_grant"}
        assert_throttled(await device_poll(attacker, str(uuid.uuid4()), "0" * 64))


async def test_a_pending_devices_polls_do_not_count(app: LifespanApp):
    async with client_at(app, "198.51.100.10") as cli:
        started = (await cli.post("/api/v1/device_authorization", data={})).json()
        polls = [
            await device_poll(cli, started["device_id"], started["device_code"])
            for _ in range(PER_ADDRESS + 5)
        ]
    assert {p.status_code for p in polls} == {400}
    assert {p.json()["error"] for p in polls} <= {"authorization_pending", "slow_down"}


# At production's argon2 cost, the side channel this closes (at the tests' least cost a hash
# is too small beside a request's own work to show whether it ran).
@pytest.mark.parametrize(
    "settings_overrides",
    [
        {
            "login_client_failure_threshold": 1000,
            "login_account_failure_threshold": 1000,
            **PasswordHashSettings().model_dump(),
        }
    ],
)
async def test_failed_logins_cost_the_same_whether_or_not_the_account_exists(app: LifespanApp):
    async with client_at(app, "192.0.2.6") as client:

        async def failed_as(username: str) -> None:
            assert (await password(client, username, "wrong password")).status_code == 401

        ratio = await cpu_time_ratio(
            lambda: failed_as("nobody-by-this-name"), lambda: failed_as(ADMIN)
        )
    assert 0.8 < ratio < 1.25, ratio
