"""``GET /api/v1/api_token``: generic tokens (workload tokens: ``test_workload.py``)."""

from __future__ import annotations

import uuid

import httpx
import jwt
import pytest

from shared.auth import TokenKind
from tests.identity.conftest import ADMIN_PASSWORD, Login, bearer, tracking_service_token
from tests.identity.device.support import device_id, device_login


def claims_of(token: str) -> dict[str, object]:
    decoded: dict[str, object] = jwt.decode(token, options={"verify_signature": False})
    return decoded


async def test_generic_token_is_a_json_string_living_an_hour_by_default(
    identity: httpx.AsyncClient, login: Login
):
    response = await identity.get("/api/v1/api_token", headers=bearer(await login()))
    assert response.status_code == 200
    token = response.json()
    assert isinstance(token, str)
    claims = claims_of(token)
    assert claims["kind"] == TokenKind.GENERIC
    assert claims["exp"] == pytest.approx(float(claims["iat"]) + 3600, abs=2)  # type: ignore[arg-type]
    assert response.headers["cache-control"] == "no-store"


async def test_generic_token_authenticates_its_user(identity: httpx.AsyncClient, login: Login):
    token = (await identity.get("/api/v1/api_token", headers=bearer(await login()))).json()
    me = await identity.get("/api/v1/current-user", headers=bearer(token))
    assert me.status_code == 200


async def test_expires_in_is_honoured(identity: httpx.AsyncClient, login: Login):
    response = await identity.get(
        "/api/v1/api_token", params={"expires_in": 120}, headers=bearer(await login())
    )
    claims = claims_of(response.json())
    assert claims["exp"] == pytest.approx(float(claims["iat"]) + 120, abs=2)  # type: ignore[arg-type]


async def test_expires_in_up_to_the_maximum_is_allowed(identity: httpx.AsyncClient, login: Login):
    response = await identity.get(
        "/api/v1/api_token", params={"expires_in": 604800}, headers=bearer(await login())
    )
    assert response.status_code == 200


@pytest.mark.parametrize("expires_in", [604801, 10**20])
async def test_expires_in_above_the_maximum_is_400(
    identity: httpx.AsyncClient, login: Login, expires_in: int
):
    response = await identity.get(
        "/api/v1/api_token", params={"expires_in": expires_in}, headers=bearer(await login())
    )
    assert response.status_code == 400
    assert response.json()["detail"] == [
        "ValueError",
        "The maximum expiration time for generic API tokens allowed by this server is "
        "604800 seconds.",
    ]


async def test_expires_in_of_zero_is_the_default_lifetime(
    identity: httpx.AsyncClient, login: Login
):
    response = await identity.get(
        "/api/v1/api_token", params={"expires_in": "0"}, headers=bearer(await login())
    )
    assert response.status_code == 200
    claims = claims_of(response.json())
    assert claims["exp"] == pytest.approx(float(claims["iat"]) + 3600, abs=2)  # type: ignore[arg-type]


@pytest.mark.parametrize("expires_in", ["-5", "soon"])
async def test_expires_in_below_zero_is_422(
    identity: httpx.AsyncClient, login: Login, expires_in: str
):
    response = await identity.get(
        "/api/v1/api_token", params={"expires_in": expires_in}, headers=bearer(await login())
    )
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "expires_in"]


@pytest.mark.parametrize("scope", ["schedule_id", "pipeline_run_id", "deployment_id"])
async def test_scoped_generic_token_is_400(identity: httpx.AsyncClient, login: Login, scope: str):
    response = await identity.get(
        "/api/v1/api_token", params={scope: str(uuid.uuid4())}, headers=bearer(await login())
    )
    assert response.status_code == 400
    assert response.json()["detail"][1].startswith("Generic API tokens cannot be scoped")


async def test_unknown_token_type_is_422(identity: httpx.AsyncClient, login: Login):
    response = await identity.get(
        "/api/v1/api_token", params={"token_type": "forever"}, headers=bearer(await login())
    )
    assert response.status_code == 422


async def test_api_token_needs_a_login(identity: httpx.AsyncClient):
    response = await identity.get("/api/v1/api_token")
    assert response.status_code == 401
    assert response.json() == {"detail": "Not authenticated"}


async def test_service_token_cannot_get_an_api_token(identity: httpx.AsyncClient):
    service = await tracking_service_token(identity)
    response = await identity.get("/api/v1/api_token", headers=bearer(service))
    assert response.status_code == 401
    assert response.json()["detail"][0] == "AuthorizationException"


async def test_generic_token_of_a_device_token_carries_the_device(
    identity: httpx.AsyncClient, login: Login
):
    authorization, redeemed = await device_login(identity, await login())
    response = await identity.get(
        "/api/v1/api_token", headers=bearer(redeemed.json()["access_token"])
    )
    assert claims_of(response.json())["device_id"] == device_id(authorization)


async def test_generic_token_dies_with_the_device_it_came_from(
    identity: httpx.AsyncClient, login: Login
):
    token = await login()
    authorization, redeemed = await device_login(identity, token)
    generic = (
        await identity.get("/api/v1/api_token", headers=bearer(redeemed.json()["access_token"]))
    ).json()
    await identity.delete(f"/api/v1/devices/{device_id(authorization)}", headers=bearer(token))
    response = await identity.get("/api/v1/current-user", headers=bearer(generic))
    assert response.status_code == 401


async def test_generic_token_dies_with_a_password_change(identity: httpx.AsyncClient, login: Login):
    token = await login()
    generic = (await identity.get("/api/v1/api_token", headers=bearer(token))).json()
    changed = await identity.put(
        "/api/v1/current-user",
        json={"password": "a brand new password", "old_password": ADMIN_PASSWORD},
        headers=bearer(token),
    )
    assert changed.status_code == 200
    response = await identity.get("/api/v1/current-user", headers=bearer(generic))
    assert response.status_code == 401
