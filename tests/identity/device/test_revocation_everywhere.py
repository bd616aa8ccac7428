"""Locking or deleting a device at identity stops its tokens on another service at once."""

from __future__ import annotations

import httpx

from tests.identity.conftest import Login, bearer
from tests.identity.device.support import create_user, device_id, device_login


async def test_locking_a_device_revokes_its_token_on_another_service(
    identity: httpx.AsyncClient, other_service: httpx.AsyncClient, login: Login
):
    token = await login()
    authorization, redeemed = await device_login(identity, token)
    device_token = bearer(redeemed.json()["access_token"])
    assert (await other_service.get("/whoami", headers=device_token)).status_code == 200

    await identity.put(
        f"/api/v1/devices/{device_id(authorization)}", json={"locked": True}, headers=bearer(token)
    )
    refused = await other_service.get("/whoami", headers=device_token)
    assert refused.status_code == 401
    assert refused.json()["detail"][0] == "CredentialsNotValid"

    await identity.put(
        f"/api/v1/devices/{device_id(authorization)}", json={"locked": False}, headers=bearer(token)
    )
    assert (await other_service.get("/whoami", headers=device_token)).status_code == 200


async def test_deleting_a_device_revokes_its_token_on_another_service(
    identity: httpx.AsyncClient, other_service: httpx.AsyncClient, login: Login
):
    token = await login()
    authorization, redeemed = await device_login(identity, token)
    device_token = bearer(redeemed.json()["access_token"])
    await identity.delete(f"/api/v1/devices/{device_id(authorization)}", headers=bearer(token))
    assert (await other_service.get("/whoami", headers=device_token)).status_code == 401


async def test_deactivating_the_user_revokes_device_tokens_on_another_service(
    identity: httpx.AsyncClient, other_service: httpx.AsyncClient, login: Login
):
    admin = await login()
    password = await create_user(identity, admin, "leaver")
    _, redeemed = await device_login(identity, await login("leaver", password))
    device_token = bearer(redeemed.json()["access_token"])
    await identity.put("/api/v1/users/leaver/deactivate", headers=bearer(admin))
    assert (await other_service.get("/whoami", headers=device_token)).status_code == 401
