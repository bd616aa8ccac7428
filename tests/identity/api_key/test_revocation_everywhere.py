"""Deactivating, rotating or deleting a key, or deactivating or deleting its service
account, stops what the key logged in on another service at once (through the shared
revocation list, as devices do); so are the API tokens minted from it."""

from __future__ import annotations

from typing import Any

import httpx

from tests.identity.api_key.support import create_account, create_key, key_token, rotate
from tests.identity.conftest import Login, bearer


async def _logged_in(
    identity: httpx.AsyncClient, admin: str
) -> tuple[dict[str, Any], dict[str, Any], str]:
    account = await create_account(identity, admin)
    created = await create_key(identity, admin, account["id"])
    return account, created, await key_token(identity, created["body"]["key"])


async def whoami(other_service: httpx.AsyncClient, token: str) -> int:
    return (await other_service.get("/whoami", headers=bearer(token))).status_code


async def test_deactivating_the_key_stops_its_tokens_until_reactivated(
    identity: httpx.AsyncClient, other_service: httpx.AsyncClient, login: Login
):
    admin = await login()
    account, created, token = await _logged_in(identity, admin)
    minted = await identity.get("/api/v1/api_token", headers=bearer(token))
    assert minted.status_code == 200, minted.text
    generic = minted.json()
    assert await whoami(other_service, token) == 200
    assert await whoami(other_service, generic) == 200

    one = f"/api/v1/service_accounts/{account['id']}/api_keys/{created['id']}"
    await identity.put(one, json={"active": False}, headers=bearer(admin))
    assert await whoami(other_service, token) == 401
    assert await whoami(other_service, generic) == 401

    await identity.put(one, json={"active": True}, headers=bearer(admin))
    assert await whoami(other_service, token) == 200


async def test_deleting_the_key_stops_its_tokens(
    identity: httpx.AsyncClient, other_service: httpx.AsyncClient, login: Login
):
    admin = await login()
    account, _created, token = await _logged_in(identity, admin)
    await identity.delete(
        f"/api/v1/service_accounts/{account['id']}/api_keys/ci", headers=bearer(admin)
    )
    assert await whoami(other_service, token) == 401


async def test_rotating_without_grace_stops_the_old_keys_tokens(
    identity: httpx.AsyncClient, other_service: httpx.AsyncClient, login: Login
):
    admin = await login()
    account, created, token = await _logged_in(identity, admin)
    await rotate(identity, admin, account["id"], created["id"], retain_period_minutes=5)
    assert await whoami(other_service, token) == 200
    await rotate(identity, admin, account["id"], created["id"])
    assert await whoami(other_service, token) == 401


async def test_deactivating_or_deleting_the_account_stops_its_tokens(
    identity: httpx.AsyncClient, other_service: httpx.AsyncClient, login: Login
):
    admin = await login()
    account, created, token = await _logged_in(identity, admin)
    one = f"/api/v1/service_accounts/{account['id']}"
    await identity.put(one, json={"active": False}, headers=bearer(admin))
    assert await whoami(other_service, token) == 401
    refused = await identity.post(
        "/api/v1/login", data={"grant_type": "zenml-api-key", "password": created["body"]["key"]}
    )
    assert refused.json()["detail"][1] == (
        "Authentication error: service account ci-bot associated with API key ci is not active"
    )

    await identity.put(one, json={"active": True}, headers=bearer(admin))
    fresh = await key_token(identity, created["body"]["key"])
    assert await whoami(other_service, fresh) == 200
    await identity.delete(one, headers=bearer(admin))
    assert await whoami(other_service, fresh) == 401
