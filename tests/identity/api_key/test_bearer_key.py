"""A ``ZENKEY_`` API key presented directly as the bearer token, as the reference server
takes it (``ZENML_STORE_API_KEY`` users, curl, CI scripts): identity, tracking and
webhooks accept it with the authority of a login with that key, and refuse it, with the
API-key login's reasons, the moment the key or its account may no longer log in.

The three services run in process; tracking and webhooks reach identity through one
router (its exchange, its JWKS) and share its Redis (the revocation list).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from identity.settings import Settings as IdentitySettings
from shared.auth import APIKeyTokens
from tests.identity.api_key.support import create_account, create_key, encoded, rotate
from tests.identity.conftest import (
    TRACKING_SECRET,
    WEBHOOKS_SECRET,
    Login,
    bearer,
    make_settings,
    tracking_service_token,
)
from tests.shared.auth.conftest import stored
from tests.support.asgi import HostRouter, LifespanApp, Outage, client_at, running
from tests.support.databases import Databases
from tests.tracking.conftest import tracking_settings_for
from tests.webhooks.conftest import webhooks_settings_for
from tracking.app import create_app as create_tracking_app
from webhooks.app import create_app as create_webhooks_app


@pytest.fixture
def identity_settings(database_url: str, redis_url: str, redis_namespace: str) -> IdentitySettings:
    clients = {"tracking": SecretStr(TRACKING_SECRET), "webhooks": SecretStr(WEBHOOKS_SECRET)}
    return make_settings(database_url, redis_url, redis_namespace, service_clients=clients)


@pytest.fixture
def outage(identity_app: LifespanApp) -> Outage:
    """Identity as the other services reach it; ``outage.down = True`` takes it away."""
    return Outage(httpx.ASGITransport(app=identity_app))


@dataclass
class Service:
    name: str
    app: LifespanApp
    client: httpx.AsyncClient
    path: str
    """A read any authenticated caller may make."""

    async def status(self, credential: str) -> int:
        return (await self.client.get(self.path, headers=bearer(credential))).status_code

    async def refusal(self, credential: str) -> Any:
        response = await self.client.get(self.path, headers=bearer(credential))
        assert response.status_code == 401, response.text
        return response.json()["detail"]


@pytest.fixture
async def services(
    identity_app: LifespanApp,
    identity: httpx.AsyncClient,
    outage: Outage,
    databases: Databases,
    redis_url: str,
    redis_namespace: str,
    tmp_path: Path,
) -> AsyncIterator[list[Service]]:
    router = HostRouter({"identity": outage})
    async with (
        databases.postgres("tracking") as tracking_db,
        databases.postgres("webhooks") as webhooks_db,
    ):
        tracking_settings = tracking_settings_for(
            tracking_db, redis_url, redis_namespace, tmp_path / "artifacts"
        )
        webhooks_settings = webhooks_settings_for(webhooks_db, redis_url, redis_namespace)
        async with (
            running(create_tracking_app(tracking_settings, http_transport=router)) as tracking,
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=tracking), base_url="http://testserver"
            ) as tracking_client,
        ):
            router.register("tracking/", tracking)  # webhooks asks it for projects
            async with (
                running(create_webhooks_app(webhooks_settings, http_transport=router)) as webhooks,
                httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=webhooks), base_url="http://testserver"
                ) as webhooks_client,
            ):
                yield [
                    Service("identity", identity_app, identity, "/api/v1/current-user"),
                    Service("tracking", tracking, tracking_client, "/api/v1/projects"),
                    Service("webhooks", webhooks, webhooks_client, "/api/v1/webhooks"),
                ]


async def _account_and_key(
    identity: httpx.AsyncClient, admin: str
) -> tuple[dict[str, Any], dict[str, Any], str]:
    account = await create_account(identity, admin)
    created = await create_key(identity, admin, account["id"])
    return account, created, created["body"]["key"]


async def statuses(services: list[Service], credential: str) -> dict[str, int]:
    return {service.name: await service.status(credential) for service in services}


def everywhere(status: int) -> dict[str, int]:
    return {"identity": status, "tracking": status, "webhooks": status}


async def assert_refused(services: list[Service], key: str, reason: str) -> None:
    """Every service answers ``key`` with the API-key login's 401 for ``reason``."""
    for service in services:
        detail = await service.refusal(key)
        assert detail == ["CredentialsNotValid", f"Authentication error: {reason}"], service.name


async def test_a_key_as_bearer_acts_as_its_service_account_on_every_service(
    identity: httpx.AsyncClient, services: list[Service], login: Login
):
    account, _created, key = await _account_and_key(identity, await login())
    assert await statuses(services, key) == everywhere(200)
    me = await identity.get("/api/v1/current-user", headers=bearer(key))
    assert (me.json()["id"], me.json()["name"]) == (account["id"], "ci-bot")
    # The scheme word in any case, as the reference matches it.
    shouted = await services[1].client.get(
        "/api/v1/projects", headers={"Authorization": f"BEARER {key}"}
    )
    assert shouted.status_code == 200, shouted.text


async def test_a_key_in_the_session_cookie_is_taken_as_the_reference_takes_it(
    identity_settings: IdentitySettings,
    identity: httpx.AsyncClient,
    services: list[Service],
    login: Login,
):
    _account, _created, key = await _account_and_key(identity, await login())
    tracking = services[1].client
    tracking.cookies.set(identity_settings.session_cookie_name, key)
    try:
        assert (await tracking.get("/api/v1/projects")).status_code == 200
    finally:
        tracking.cookies.clear()


async def test_deactivating_the_key_refuses_it_on_every_service(
    identity: httpx.AsyncClient, services: list[Service], login: Login
):
    admin = await login()
    account, created, key = await _account_and_key(identity, admin)
    assert await statuses(services, key) == everywhere(200)
    one = f"/api/v1/service_accounts/{account['id']}/api_keys/{created['id']}"
    await identity.put(one, json={"active": False}, headers=bearer(admin))
    await assert_refused(
        services, key, "API key ci associated with service account ci-bot is not active"
    )


async def test_rotating_without_grace_refuses_the_old_key_on_every_service(
    identity: httpx.AsyncClient, services: list[Service], login: Login
):
    admin = await login()
    account, created, old = await _account_and_key(identity, admin)
    assert await statuses(services, old) == everywhere(200)
    kept = await rotate(identity, admin, account["id"], created["id"], retain_period_minutes=5)
    assert await statuses(services, old) == everywhere(200)
    assert await statuses(services, kept["body"]["key"]) == everywhere(200)

    new = await rotate(identity, admin, account["id"], created["id"])
    await assert_refused(services, old, "could not verify key value for API key ci")
    assert await statuses(services, new["body"]["key"]) == everywhere(200)


async def test_deleting_the_key_refuses_it_on_every_service(
    identity: httpx.AsyncClient, services: list[Service], login: Login
):
    admin = await login()
    account, created, key = await _account_and_key(identity, admin)
    assert await statuses(services, key) == everywhere(200)
    await identity.delete(
        f"/api/v1/service_accounts/{account['id']}/api_keys/ci", headers=bearer(admin)
    )
    await assert_refused(services, key, f"error retrieving API key {created['id']}")


async def test_deactivating_or_deleting_the_account_refuses_its_key_on_every_service(
    identity: httpx.AsyncClient, services: list[Service], login: Login
):
    admin = await login()
    account, _created, key = await _account_and_key(identity, admin)
    assert await statuses(services, key) == everywhere(200)
    one = f"/api/v1/service_accounts/{account['id']}"
    await identity.put(one, json={"active": False}, headers=bearer(admin))
    await assert_refused(
        services, key, "service account ci-bot associated with API key ci is not active"
    )

    # A refusal is remembered a few seconds: another account shows deletion at once.
    other = await create_account(identity, admin, name="ci-bot-2")
    other_key = (await create_key(identity, admin, other["id"]))["body"]["key"]
    assert await statuses(services, other_key) == everywhere(200)
    await identity.delete(f"/api/v1/service_accounts/{other['id']}", headers=bearer(admin))
    assert await statuses(services, other_key) == everywhere(401)


async def test_a_garbled_or_forged_key_is_refused_in_the_platform_shape(
    identity: httpx.AsyncClient, services: list[Service], login: Login
):
    _account, created, _key = await _account_and_key(identity, await login())
    unknown = str(uuid.uuid4())
    cases = {
        "ZENKEY_garbage!": "error decoding API key",
        encoded(unknown, "0" * 64): f"error retrieving API key {unknown}",
        encoded(created["id"], "0" * 64): "could not verify key value for API key ci",
    }
    for key, reason in cases.items():
        await assert_refused(services, key, reason)


async def test_identity_out_of_reach_is_503_and_the_key_works_once_it_is_back(
    identity: httpx.AsyncClient, services: list[Service], outage: Outage, login: Login
):
    _account, _created, key = await _account_and_key(identity, await login())
    outage.down = True
    for service in services[1:]:
        response = await service.client.get(service.path, headers=bearer(key))
        assert response.status_code == 503, response.text
        assert response.json()["detail"] == [
            "ServiceUnavailable",
            "API keys cannot be checked right now.",
        ]
    outage.down = False
    assert await statuses(services, key) == everywhere(200)


async def test_the_exchange_answers_service_tokens_only(identity: httpx.AsyncClient, login: Login):
    _account, _created, key = await _account_and_key(identity, await login())
    path = "/internal/v1/api_key_tokens"
    refused = await identity.post(path, json={"api_key": key}, headers=bearer(key))
    assert refused.status_code == 401
    assert refused.json()["detail"][0] == "AuthorizationException"
    service = bearer(await tracking_service_token(identity))
    issued = await identity.post(path, json={"api_key": key, "client": "10.9.8.7"}, headers=service)
    assert issued.status_code == 200, issued.text
    assert issued.headers["cache-control"] == "no-store"
    # A refused key is an answer of the exchange, not a 401 (its caller's auth would take
    # that for its own token refused, and ask again).
    wrong = await identity.post(path, json={"api_key": "ZENKEY_x"}, headers=service)
    assert (wrong.status_code, wrong.json()["refused"]) == (200, "error decoding API key")
    me = await identity.get("/api/v1/current-user", headers=bearer(issued.json()["access_token"]))
    assert me.json()["name"] == "ci-bot"


async def test_the_key_is_never_logged_nor_kept_in_clear(
    identity: httpx.AsyncClient,
    services: list[Service],
    login: Login,
    caplog: pytest.LogCaptureFixture,
):
    admin = await login()
    account, created, key = await _account_and_key(identity, admin)
    with caplog.at_level(logging.DEBUG):
        assert await statuses(services, key) == everywhere(200)
        await identity.put(
            f"/api/v1/service_accounts/{account['id']}/api_keys/{created['id']}",
            json={"active": False},
            headers=bearer(admin),
        )
        assert await statuses(services, key) == everywhere(401)
    secret = key.removeprefix("ZENKEY_")
    logged = [record.getMessage() + repr(record.__dict__) for record in caplog.records]
    assert logged
    assert not any(secret in line for line in logged)
    for service in services:
        tokens: APIKeyTokens = service.app.state["api_key_tokens"]
        assert len(tokens) == 1
        assert secret not in stored(tokens)


async def test_wrong_keys_count_against_the_callers_address_as_logins_do(
    identity: httpx.AsyncClient, services: list[Service], login: Login
):
    _account, created, key = await _account_and_key(identity, await login())
    tracking = services[1]
    for attempt in range(10):  # login_client_failure_threshold
        assert await tracking.status(encoded(created["id"], f"{attempt:064d}")) == 401, attempt
    throttled = await tracking.client.get(tracking.path, headers=bearer(encoded(created["id"], "")))
    assert throttled.status_code == 429, throttled.text
    assert throttled.headers["retry-after"].isdigit()
    # The address is locked out of exchanging, as of logging in; another is not.
    async with client_at(services[0].app, "10.0.0.2") as elsewhere:
        me = await elsewhere.get("/api/v1/current-user", headers=bearer(key))
    assert me.status_code == 200, me.text


async def test_a_service_without_credentials_refuses_keys(
    identity: httpx.AsyncClient, other_service: httpx.AsyncClient, login: Login
):
    _account, _created, key = await _account_and_key(identity, await login())
    refused = await other_service.get("/whoami", headers=bearer(key))
    assert refused.status_code == 401
    assert refused.json()["detail"] == [
        "CredentialsNotValid",
        "Authentication error: API keys are not accepted by this service",
    ]
