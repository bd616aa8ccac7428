"""The device-code grant on ``/login`` (RFC 8628 §3.4-3.5): every answer a polling device
can get."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import httpx
import jwt
import pytest

from identity.app import create_app
from shared.auth import TokenKind
from tests.identity.conftest import ADMIN, ADMIN_PASSWORD, Clock, Login, bearer, make_settings
from tests.identity.device.support import (
    DEVICE_GRANT,
    authorize,
    create_user,
    device_id,
    device_login,
    poll,
    verify,
)
from tests.support.asgi import client_for

OAUTH_KEYS = {"error", "error_description", "error_uri"}


def oauth_error(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == OAUTH_KEYS
    assert body["error_uri"] is None
    error: str = body["error"]
    return error


async def test_poll_before_verification_is_authorization_pending(identity: httpx.AsyncClient):
    authorization = await authorize(identity)
    response = await poll(identity, authorization["client_id"], authorization["device_code"])
    assert oauth_error(response) == "authorization_pending"


async def test_polling_faster_than_the_interval_is_slow_down_and_widens_it(
    identity: httpx.AsyncClient, clock: Clock
):
    authorization = await authorize(identity)
    assert authorization["interval"] == 5
    client_id, code = authorization["client_id"], authorization["device_code"]
    assert oauth_error(await poll(identity, client_id, code)) == "authorization_pending"
    assert oauth_error(await poll(identity, client_id, code)) == "slow_down"
    # The server keeps the widened interval (5 + 5 s): waiting the old one is too fast.
    clock.advance(seconds=5)
    response = await poll(identity, client_id, code)
    assert oauth_error(response) == "slow_down"
    assert "15 seconds" in response.json()["error_description"]


async def test_polling_at_the_interval_never_gets_slow_down(
    identity: httpx.AsyncClient, clock: Clock
):
    authorization = await authorize(identity)
    for _ in range(3):
        response = await poll(identity, authorization["client_id"], authorization["device_code"])
        assert oauth_error(response) == "authorization_pending"
        clock.advance(seconds=authorization["interval"])


async def test_verified_device_gets_a_device_token(identity: httpx.AsyncClient, login: Login):
    authorization = await authorize(identity)
    await verify(identity, await login(), authorization)
    response = await poll(identity, authorization["client_id"], authorization["device_code"])
    assert response.status_code == 200
    body = response.json()
    assert body["device_id"] == device_id(authorization)
    assert body["token_type"] == "bearer"
    assert body["device_metadata"] is None
    assert 86390 <= body["expires_in"] <= 86400  # device_expiration: one day
    assert "set-cookie" not in response.headers
    assert response.headers["cache-control"] == "no-store"
    claims = jwt.decode(body["access_token"], options={"verify_signature": False})
    assert claims["kind"] == TokenKind.DEVICE
    assert claims["device_id"] == device_id(authorization)
    assert claims["name"] == ADMIN
    assert abs(claims["exp"] - claims["iat"] - body["expires_in"]) <= 2


async def test_trusted_device_lives_the_trusted_lifetime(identity: httpx.AsyncClient, login: Login):
    authorization = await authorize(identity)
    await verify(identity, await login(), authorization, trusted=True)
    response = await poll(identity, authorization["client_id"], authorization["device_code"])
    assert 30 * 86400 - 10 <= response.json()["expires_in"] <= 30 * 86400


async def test_device_lifetimes_come_from_settings(
    database_url: str, redis_url: str, redis_namespace: str
):
    settings = make_settings(
        database_url,
        redis_url,
        redis_namespace,
        device_expiration=timedelta(minutes=120),
        trusted_device_expiration=timedelta(minutes=1440),
    )
    lifetimes = []
    async with client_for(create_app(settings)) as client:
        login = await client.post(
            "/api/v1/login", data={"username": ADMIN, "password": ADMIN_PASSWORD}
        )
        client.cookies.clear()
        for trusted in (False, True):
            authorization = await authorize(client)
            await verify(client, login.json()["access_token"], authorization, trusted=trusted)
            response = await poll(client, authorization["client_id"], authorization["device_code"])
            lifetimes.append(response.json()["expires_in"])
    assert 7190 <= lifetimes[0] <= 7200
    assert 86390 <= lifetimes[1] <= 86400


async def test_device_token_authenticates_its_user(identity: httpx.AsyncClient, login: Login):
    authorization = await authorize(identity)
    await verify(identity, await login(), authorization)
    response = await poll(identity, authorization["client_id"], authorization["device_code"])
    me = await identity.get("/api/v1/current-user", headers=bearer(response.json()["access_token"]))
    assert me.status_code == 200
    assert me.json()["name"] == ADMIN


async def test_device_code_is_redeemed_only_once(
    identity: httpx.AsyncClient, login: Login, clock: Clock
):
    authorization = await authorize(identity)
    await verify(identity, await login(), authorization)
    client_id, code = authorization["client_id"], authorization["device_code"]
    assert (await poll(identity, client_id, code)).status_code == 200
    clock.advance(seconds=authorization["interval"])
    assert oauth_error(await poll(identity, client_id, code)) == "invalid_grant"


async def test_wrong_device_codes_never_lock_a_verified_device(
    identity: httpx.AsyncClient, login: Login
):
    authorization = await authorize(identity)
    await verify(identity, await login(), authorization)
    client_id = authorization["client_id"]
    answers = [oauth_error(await poll(identity, client_id, "0" * 64)) for _ in range(5)]
    assert answers == ["invalid_grant"] * 5
    right = await poll(identity, client_id, authorization["device_code"])
    assert right.status_code == 200, right.text


async def test_wrong_device_codes_never_lock_or_revoke_an_active_device(
    identity: httpx.AsyncClient, login: Login
):
    admin = await login()
    authorization, redeemed = await device_login(identity, admin)
    client_id = authorization["client_id"]
    for _ in range(5):
        assert oauth_error(await poll(identity, client_id, "0" * 64)) == "invalid_grant"
    token = redeemed.json()["access_token"]
    assert (await identity.get("/api/v1/current-user", headers=bearer(token))).status_code == 200
    device = await identity.get(
        f"/api/v1/devices/{device_id(authorization)}", headers=bearer(admin)
    )
    assert device.json()["body"]["status"] == "active"
    assert device.json()["metadata"]["failed_auth_attempts"] == 0


async def test_a_wrong_device_code_tells_nothing_of_a_locked_device(
    identity: httpx.AsyncClient, login: Login
):
    token = await login()
    authorization = await authorize(identity)
    for _ in range(3):
        await verify(identity, token, authorization, user_code="0" * 32)
    response = await poll(identity, authorization["client_id"], "0" * 64)
    assert oauth_error(response) == "invalid_grant"


async def test_device_code_of_another_client_is_refused(identity: httpx.AsyncClient, login: Login):
    token = await login()
    mine, theirs = await authorize(identity), await authorize(identity)
    await verify(identity, token, theirs)
    response = await poll(identity, mine["client_id"], theirs["device_code"])
    assert oauth_error(response) == "invalid_grant"


async def test_locked_device_is_access_denied(identity: httpx.AsyncClient, login: Login):
    token = await login()
    authorization = await authorize(identity)
    for _ in range(3):
        await verify(identity, token, authorization, user_code="0" * 32)
    response = await poll(identity, authorization["client_id"], authorization["device_code"])
    assert oauth_error(response) == "access_denied"


async def test_poll_after_the_code_expired_is_expired_token(
    identity: httpx.AsyncClient, clock: Clock
):
    authorization = await authorize(identity)
    clock.advance(seconds=authorization["expires_in"] - 1)
    response = await poll(identity, authorization["client_id"], authorization["device_code"])
    assert oauth_error(response) == "authorization_pending"
    clock.advance(seconds=1)
    response = await poll(identity, authorization["client_id"], authorization["device_code"])
    assert oauth_error(response) == "expired_token"


async def test_unknown_client_is_invalid_client(identity: httpx.AsyncClient):
    response = await poll(identity, uuid.uuid4(), "0" * 64)
    assert oauth_error(response) == "invalid_client"


@pytest.mark.parametrize("missing", ["client_id", "device_code"])
async def test_device_grant_without_code_or_client_is_400(
    identity: httpx.AsyncClient, missing: str
):
    data = {"grant_type": DEVICE_GRANT, "client_id": str(uuid.uuid4()), "device_code": "x"}
    del data[missing]
    response = await identity.post("/api/v1/login", data=data)
    assert response.status_code == 400
    assert response.json() == {"detail": "Invalid request: device code and client ID are required."}


async def test_device_grant_with_a_malformed_client_id_is_400(identity: httpx.AsyncClient):
    response = await poll(identity, "not-a-uuid", "x")
    assert response.status_code == 400
    assert response.json() == {"detail": "Invalid request: invalid client ID."}


async def test_device_grant_is_inferred_from_a_device_code(identity: httpx.AsyncClient):
    authorization = await authorize(identity)
    response = await identity.post(
        "/api/v1/login",
        data={"client_id": authorization["client_id"], "device_code": authorization["device_code"]},
    )
    assert oauth_error(response) == "authorization_pending"


async def test_deactivated_users_verified_device_gets_no_token(
    identity: httpx.AsyncClient, login: Login
):
    admin = await login()
    password = await create_user(identity, admin, "leaver")
    authorization = await authorize(identity)
    await verify(identity, await login("leaver", password), authorization)
    await identity.put("/api/v1/users/leaver/deactivate", headers=bearer(admin))
    response = await poll(identity, authorization["client_id"], authorization["device_code"])
    assert oauth_error(response) == "access_denied"


async def test_concurrent_polls_redeem_the_code_once(identity: httpx.AsyncClient, login: Login):
    authorization = await authorize(identity)
    await verify(identity, await login(), authorization)
    responses = await asyncio.gather(
        *(
            poll(identity, authorization["client_id"], authorization["device_code"])
            for _ in range(5)
        )
    )
    assert sorted(r.status_code for r in responses) == [200, 400, 400, 400, 400]
