"""Revocation made at identity holds on every service that shares the Redis."""

from __future__ import annotations

import httpx

from tests.identity.conftest import ADMIN_PASSWORD, Login, bearer


async def test_logout_revokes_the_token_on_another_service(
    identity: httpx.AsyncClient, other_service: httpx.AsyncClient, login: Login
):
    token = await login()
    assert (await other_service.get("/whoami", headers=bearer(token))).status_code == 200
    await identity.get("/api/v1/logout", headers=bearer(token))
    response = await other_service.get("/whoami", headers=bearer(token))
    assert response.status_code == 401
    assert response.json()["detail"][0] == "CredentialsNotValid"


async def test_password_change_revokes_sessions_on_another_service(
    identity: httpx.AsyncClient, other_service: httpx.AsyncClient, login: Login
):
    token = await login()
    await identity.put(
        "/api/v1/current-user",
        json={"password": "another password 1", "old_password": ADMIN_PASSWORD},
        headers=bearer(token),
    )
    assert (await other_service.get("/whoami", headers=bearer(token))).status_code == 401


async def test_service_without_credentials_answers_401_not_authenticated(
    other_service: httpx.AsyncClient,
):
    response = await other_service.get("/whoami")
    assert response.status_code == 401
    assert response.json() == {"detail": "Not authenticated"}


async def test_deactivating_a_user_revokes_their_sessions_on_another_service(
    identity: httpx.AsyncClient, other_service: httpx.AsyncClient, login: Login
):
    admin = await login()
    created = await identity.post(
        "/api/v1/users",
        json={"name": "temp", "is_admin": False, "active": True, "password": "temp password 1"},
        headers=bearer(admin),
    )
    assert created.status_code == 200
    token = await login("temp", "temp password 1")
    assert (await other_service.get("/whoami", headers=bearer(token))).status_code == 200
    await identity.put("/api/v1/users/temp/deactivate", headers=bearer(admin))
    assert (await other_service.get("/whoami", headers=bearer(token))).status_code == 401
