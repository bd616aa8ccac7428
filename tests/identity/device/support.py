"""The device flow's three calls, as the zenml client and a browser make them."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.identity.conftest import bearer

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
USER_AGENT = "Host/laptop ZenML/0.96.3 Python/3.11.9 OS/Linux-6.1"


async def authorize(
    client: httpx.AsyncClient, client_id: uuid.UUID | None = None, **headers: str
) -> dict[str, Any]:
    """The authorization response, plus the ``client_id`` it was asked for."""
    client_id = client_id or uuid.uuid4()
    response = await client.post(
        "/api/v1/device_authorization",
        data={"client_id": str(client_id)},
        headers={"User-Agent": USER_AGENT, **headers},
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    body["client_id"] = str(client_id)
    return body


def _query_value(url: str, name: str) -> str:
    return httpx.URL(url).params[name]


def device_id(authorization: dict[str, Any]) -> str:
    return _query_value(authorization["verification_uri_complete"], "device_id")


async def verify(
    client: httpx.AsyncClient,
    token: str,
    authorization: dict[str, Any],
    *,
    user_code: str | None = None,
    trusted: bool = False,
) -> httpx.Response:
    return await client.put(
        f"/api/v1/devices/{device_id(authorization)}/verify",
        json={
            "user_code": authorization["user_code"] if user_code is None else user_code,
            "trusted_device": trusted,
        },
        headers=bearer(token),
    )


async def poll(
    client: httpx.AsyncClient,
    client_id: uuid.UUID | str,
    device_code: str,
) -> httpx.Response:
    return await client.post(
        "/api/v1/login",
        data={"grant_type": DEVICE_GRANT, "client_id": str(client_id), "device_code": device_code},
    )


async def device_login(
    client: httpx.AsyncClient, token: str, *, trusted: bool = False
) -> tuple[dict[str, Any], httpx.Response]:
    """The whole flow for a new client: authorize, verify as ``token``'s user, redeem."""
    authorization = await authorize(client)
    verified = await verify(client, token, authorization, trusted=trusted)
    assert verified.status_code == 200, verified.text
    redeemed = await poll(client, authorization["client_id"], authorization["device_code"])
    assert redeemed.status_code == 200, redeemed.text
    return authorization, redeemed


async def create_user(client: httpx.AsyncClient, admin_token: str, name: str) -> str:
    """A second active user; returns its password."""
    password = f"{name} password 123"
    response = await client.post(
        "/api/v1/users",
        json={"name": name, "is_admin": False, "active": True, "password": password},
        headers=bearer(admin_token),
    )
    assert response.status_code == 200, response.text
    return password
