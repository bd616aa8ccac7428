"""Revocation made at identity holds on every service that shares the Redis."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

import httpx
import pytest

from shared.auth import TokenKind, TokenSigner
from tests.identity.api_key.support import create_account, create_key, key_token
from tests.identity.conftest import ADMIN_PASSWORD, Clock, Login, bearer
from tests.support.asgi import LifespanApp


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


async def forged_after_deletion(identity_app: LifespanApp, clock: Clock, user_id: str) -> str:
    """A token of ``user_id`` signed with identity's own key after the account was deleted:
    what a stolen signing key would give (later than the deletion, within the other
    service's leeway: it runs on real time)."""
    clock.advance(seconds=10)
    signer: TokenSigner = await identity_app.state["keyring"].signer()
    token, _ = signer.issue(
        subject=user_id,
        kind=TokenKind.ACCESS,
        audience="platform-api",
        lifetime=timedelta(hours=1),
        extra={"name": "gone", "admin": True},
        now=clock(),
    )
    return token


async def a_user(identity: httpx.AsyncClient, login: Login, admin: str) -> tuple[str, str, str]:
    """A user's id, a token it logged in with, and the path that deletes it."""
    created = await identity.post(
        "/api/v1/users",
        json={"name": "temp", "is_admin": False, "active": True, "password": "temp password 1"},
        headers=bearer(admin),
    )
    token = await login("temp", "temp password 1")
    return created.json()["id"], token, "/api/v1/users/temp"


async def a_service_account(
    identity: httpx.AsyncClient, _login: Login, admin: str
) -> tuple[str, str, str]:
    """The same for a service account, with a token of its API key."""
    account = await create_account(identity, admin)
    key = await create_key(identity, admin, account["id"])
    return (
        account["id"],
        await key_token(identity, key["body"]["key"]),
        (f"/api/v1/service_accounts/{account['id']}"),
    )


@pytest.mark.parametrize("make", [a_user, a_service_account])
async def test_deleting_an_account_refuses_its_tokens_on_every_service_whenever_signed(
    identity: httpx.AsyncClient,
    identity_app: LifespanApp,
    other_service: httpx.AsyncClient,
    clock: Clock,
    login: Login,
    make: Callable[..., Awaitable[tuple[str, str, str]]],
):
    admin = await login()
    account_id, token, path = await make(identity, login, admin)
    assert (await identity.delete(path, headers=bearer(admin))).status_code == 200

    forged = await forged_after_deletion(identity_app, clock, account_id)
    for credential in (token, forged):
        for service, route in ((other_service, "/whoami"), (identity, "/api/v1/current-user")):
            response = await service.get(route, headers=bearer(credential))
            assert response.status_code == 401
            assert response.json()["detail"][1] == "Authentication error: token has been revoked"
