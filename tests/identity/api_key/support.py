"""Service accounts and their keys, made as the zenml CLI makes them."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx

from tests.identity.conftest import bearer


async def create_account(
    client: httpx.AsyncClient, admin: str, name: str = "ci-bot", **fields: Any
) -> dict[str, Any]:
    response = await client.post(
        "/api/v1/service_accounts",
        json={"name": name, "active": True, **fields},
        headers=bearer(admin),
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def create_key(
    client: httpx.AsyncClient, admin: str, account_id: str, name: str = "ci"
) -> dict[str, Any]:
    response = await client.post(
        f"/api/v1/service_accounts/{account_id}/api_keys",
        json={"name": name, "description": "for CI"},
        headers=bearer(admin),
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def key_login(client: httpx.AsyncClient, key: str) -> httpx.Response:
    """The zenml client's API-key login (``zenml login --api-key``, ``ZENML_STORE_API_KEY``)."""
    response = await client.post(
        "/api/v1/login", data={"grant_type": "zenml-api-key", "password": key}
    )
    client.cookies.clear()
    return response


async def key_token(client: httpx.AsyncClient, key: str) -> str:
    response = await key_login(client, key)
    assert response.status_code == 200, response.text
    token: str = response.json()["access_token"]
    return token


async def rotate(
    client: httpx.AsyncClient, admin: str, account_id: str, key_id: str, **body: Any
) -> dict[str, Any]:
    response = await client.put(
        f"/api/v1/service_accounts/{account_id}/api_keys/{key_id}/rotate",
        json=body,
        headers=bearer(admin),
    )
    assert response.status_code == 200, response.text
    rotated: dict[str, Any] = response.json()
    return rotated


def encoded(key_id: str, secret: str) -> str:
    """A ``ZENKEY_`` key as the zenml client encodes one."""
    payload = json.dumps({"id": key_id, "key": secret}).encode()
    return "ZENKEY_" + base64.b64encode(payload).decode()
