"""Admin user management, activation, deactivation and password changes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import text

from identity.app import create_app
from identity.settings import Settings
from shared.db import create_engine
from shared.passwords import PasswordHashSettings
from tests.identity.conftest import ADMIN, ADMIN_PASSWORD, Login, bearer
from tests.support.asgi import client_for

PASSWORD = "a long enough password"


async def _create(
    identity: httpx.AsyncClient, token: str, name: str = "alice", **fields: Any
) -> httpx.Response:
    body = {"name": name, "is_admin": False, "password": PASSWORD, "active": True, **fields}
    return await identity.post("/api/v1/users", json=body, headers=bearer(token))


async def test_admin_creates_user_who_can_log_in(identity: httpx.AsyncClient, login: Login):
    response = await _create(identity, await login())
    assert response.status_code == 200
    body = response.json()
    assert body["name"] == "alice"
    assert body["body"]["activation_token"] is None
    assert body["metadata"] is not None
    assert body["resources"] is not None
    assert await login("alice", PASSWORD)


async def test_duplicate_user_name_is_409(identity: httpx.AsyncClient, login: Login):
    token = await login()
    await _create(identity, token)
    response = await _create(identity, token)
    assert response.status_code == 409
    assert response.json()["detail"][0] == "EntityExistsError"


async def test_non_admin_cannot_create_users(identity: httpx.AsyncClient, login: Login):
    await _create(identity, await login())
    response = await _create(identity, await login("alice", PASSWORD), name="bob")
    assert response.status_code == 403
    assert response.json()["detail"][0] == "IllegalOperationError"


async def test_short_password_is_refused(identity: httpx.AsyncClient, login: Login):
    response = await _create(identity, await login(), password="short")
    assert response.status_code == 400


async def test_long_multibyte_password_is_accepted_whole(identity: httpx.AsyncClient, login: Login):
    password = "пароль-" * 30  # far beyond bcrypt's 72 bytes
    await _create(identity, await login(), password=password)
    assert await login("alice", password)
    failed = await identity.post(
        "/api/v1/login", data={"username": "alice", "password": password[:-1]}
    )
    assert failed.status_code == 401


async def test_passwords_are_stored_as_argon2id_at_owasps_cost(identity_settings: Settings):
    """The tests lower the cost (PasswordHashSettings); the defaults are OWASP's."""
    defaults = PasswordHashSettings()
    settings = identity_settings.model_copy(update=defaults.model_dump())
    async with client_for(create_app(settings)) as identity:
        response = await identity.post(
            "/api/v1/login", data={"username": ADMIN, "password": ADMIN_PASSWORD}
        )
        await _create(identity, response.json()["access_token"])
    engine = create_engine(settings.database_url)
    async with engine.connect() as conn:
        stored = (
            await conn.execute(text("SELECT password_hash FROM users WHERE name = 'alice'"))
        ).scalar_one()
    await engine.dispose()
    assert stored.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert PASSWORD not in stored


async def test_user_without_password_gets_a_one_time_activation_token(
    identity: httpx.AsyncClient, login: Login
):
    response = await identity.post(
        "/api/v1/users",
        json={"name": "carol", "is_admin": False},
        headers=bearer(await login()),
    )
    token = response.json()["body"]["activation_token"]
    assert token
    assert response.json()["body"]["active"] is False
    activated = await identity.put(
        "/api/v1/users/carol/activate", json={"activation_token": token, "password": PASSWORD}
    )
    assert activated.status_code == 200
    assert activated.json()["body"]["active"] is True
    assert await login("carol", PASSWORD)
    again = await identity.put(
        "/api/v1/users/carol/activate", json={"activation_token": token, "password": PASSWORD}
    )
    assert again.status_code == 403


async def test_activation_with_a_wrong_token_is_403(identity: httpx.AsyncClient, login: Login):
    await identity.post(
        "/api/v1/users", json={"name": "carol", "is_admin": False}, headers=bearer(await login())
    )
    response = await identity.put(
        "/api/v1/users/carol/activate", json={"activation_token": "guess", "password": PASSWORD}
    )
    assert response.status_code == 403


async def test_list_users_returns_the_page_envelope(identity: httpx.AsyncClient, login: Login):
    token = await login()
    for name in ("a1", "a2", "a3"):
        await _create(identity, token, name=name)
    response = await identity.get("/api/v1/users?size=2&page=2", headers=bearer(token))
    assert response.status_code == 200
    page = response.json()
    assert {k: page[k] for k in ("index", "max_size", "total_pages", "total")} == {
        "index": 2,
        "max_size": 2,
        "total_pages": 2,
        "total": 4,
    }
    assert [u["name"] for u in page["items"]] == ["a2", "a3"]
    assert page["items"][0]["metadata"] is None


async def test_list_users_filters_by_name(identity: httpx.AsyncClient, login: Login):
    token = await login()
    await _create(identity, token, name="zed")
    response = await identity.get("/api/v1/users?name=zed", headers=bearer(token))
    assert [u["name"] for u in response.json()["items"]] == ["zed"]


async def _listed(identity: httpx.AsyncClient, token: str, **params: str) -> list[str]:
    response = await identity.get(
        "/api/v1/users", params={**params, "sort_by": "name"}, headers=bearer(token)
    )
    assert response.status_code == 200, response.text
    return [u["name"] for u in response.json()["items"]]


async def test_list_users_filters_by_email_opt_in(identity: httpx.AsyncClient, login: Login):
    token = await login()
    await _create(identity, token, name="keen", email_opted_in=True)
    await _create(identity, token, name="quiet", email_opted_in=False)
    assert await _listed(identity, token, email_opted_in="true") == ["keen"]
    assert await _listed(identity, token, email_opted_in="0") == ["quiet"]
    assert await _listed(identity, token, email_opted_in="isnull:") == [ADMIN]


async def test_list_users_filters_by_external_user_id(identity: httpx.AsyncClient, login: Login):
    token = await login()
    external = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"
    await _create(identity, token, name="linked", external_user_id=external)
    await _create(identity, token, name="local")
    assert await _listed(identity, token, external_user_id=external) == ["linked"]
    assert await _listed(identity, token, external_user_id="startswith:0f1e2d3c") == ["linked"]
    assert await _listed(identity, token, external_user_id="isnull:") == [ADMIN, "local"]


@pytest.mark.parametrize(
    ("param", "value"),
    [("email_opted_in", "maybe"), ("email_opted_in", "gt:1"), ("external_user_id", 'oneof:["x"]')],
)
async def test_malformed_user_filter_is_422(
    identity: httpx.AsyncClient, login: Login, param: str, value: str
):
    response = await identity.get(
        "/api/v1/users", params={param: value}, headers=bearer(await login())
    )
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", param]


async def test_page_past_the_end_is_an_empty_page(identity: httpx.AsyncClient, login: Login):
    response = await identity.get("/api/v1/users?page=5", headers=bearer(await login()))
    assert response.status_code == 200
    page = response.json()
    assert (page["index"], page["total"], page["total_pages"], page["items"]) == (5, 1, 1, [])


async def test_page_size_out_of_range_is_422(identity: httpx.AsyncClient, login: Login):
    response = await identity.get("/api/v1/users?size=0", headers=bearer(await login()))
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "size"]


async def test_unknown_sort_key_is_422(identity: httpx.AsyncClient, login: Login):
    response = await identity.get(
        "/api/v1/users?sort_by=password_hash", headers=bearer(await login())
    )
    assert response.status_code == 422


async def test_get_user_by_name_or_id(identity: httpx.AsyncClient, login: Login):
    token = await login()
    user_id = (await _create(identity, token)).json()["id"]
    by_name = await identity.get("/api/v1/users/alice", headers=bearer(token))
    by_id = await identity.get(f"/api/v1/users/{user_id}", headers=bearer(token))
    assert by_name.json()["id"] == by_id.json()["id"] == user_id


async def test_missing_user_is_404(identity: httpx.AsyncClient, login: Login):
    response = await identity.get("/api/v1/users/nobody", headers=bearer(await login()))
    assert response.status_code == 404
    assert response.json()["detail"][0] == "KeyError"


async def test_non_admin_cannot_read_another_user(identity: httpx.AsyncClient, login: Login):
    token = await login()
    await _create(identity, token)
    response = await identity.get(
        f"/api/v1/users/{ADMIN}", headers=bearer(await login("alice", PASSWORD))
    )
    assert response.status_code == 403


async def test_deactivation_revokes_tokens_and_returns_activation_token(
    identity: httpx.AsyncClient, login: Login
):
    admin = await login()
    await _create(identity, admin)
    alice = await login("alice", PASSWORD)
    response = await identity.put("/api/v1/users/alice/deactivate", headers=bearer(admin))
    assert response.status_code == 200
    assert response.json()["body"]["active"] is False
    assert response.json()["body"]["activation_token"]
    me = await identity.get("/api/v1/current-user", headers=bearer(alice))
    assert me.status_code == 401
    relogin = await identity.post("/api/v1/login", data={"username": "alice", "password": PASSWORD})
    assert relogin.status_code == 401


async def test_admin_cannot_deactivate_itself(identity: httpx.AsyncClient, login: Login):
    response = await identity.put(
        f"/api/v1/users/{ADMIN}/deactivate", headers=bearer(await login())
    )
    assert response.status_code == 403


@pytest.mark.parametrize("path", ["/api/v1/current-user", f"/api/v1/users/{ADMIN}"])
async def test_admin_cannot_deactivate_itself_by_an_update(
    identity: httpx.AsyncClient, login: Login, path: str
):
    token = await login()
    response = await identity.put(path, json={"active": False}, headers=bearer(token))
    assert response.status_code == 403
    assert response.json()["detail"] == [
        "IllegalOperationError",
        "An account cannot change its own active status.",
    ]
    me = await identity.get("/api/v1/current-user", headers=bearer(token))
    assert me.status_code == 200
    assert me.json()["body"]["active"] is True
    # Sending what is already so changes nothing and is fine.
    same = await identity.put(path, json={"active": True}, headers=bearer(token))
    assert same.status_code == 200


async def test_password_change_needs_the_old_password(identity: httpx.AsyncClient, login: Login):
    token = await login()
    response = await identity.put(
        "/api/v1/current-user", json={"password": "new password 123"}, headers=bearer(token)
    )
    assert response.status_code == 400


async def test_password_change_revokes_existing_sessions(identity: httpx.AsyncClient, login: Login):
    token = await login()
    response = await identity.put(
        "/api/v1/current-user",
        json={"password": "new password 123", "old_password": ADMIN_PASSWORD},
        headers=bearer(token),
    )
    assert response.status_code == 200
    assert (await identity.get("/api/v1/current-user", headers=bearer(token))).status_code == 401
    fresh = await login(ADMIN, "new password 123")
    assert (await identity.get("/api/v1/current-user", headers=bearer(fresh))).status_code == 200


async def test_user_cannot_make_itself_admin(identity: httpx.AsyncClient, login: Login):
    await _create(identity, await login())
    alice = await login("alice", PASSWORD)
    response = await identity.put(
        "/api/v1/current-user", json={"is_admin": True}, headers=bearer(alice)
    )
    assert response.status_code == 403


async def test_rename_onto_an_existing_name_is_409(identity: httpx.AsyncClient, login: Login):
    token = await login()
    await _create(identity, token)
    response = await identity.put(
        "/api/v1/users/alice", json={"name": ADMIN}, headers=bearer(token)
    )
    assert response.status_code == 409


async def test_delete_user_revokes_its_tokens(identity: httpx.AsyncClient, login: Login):
    admin = await login()
    await _create(identity, admin)
    alice = await login("alice", PASSWORD)
    response = await identity.delete("/api/v1/users/alice", headers=bearer(admin))
    assert response.status_code == 200
    assert response.json() is None
    assert (await identity.get("/api/v1/current-user", headers=bearer(alice))).status_code == 401


async def test_unknown_body_fields_cannot_escalate(identity: httpx.AsyncClient, login: Login):
    await _create(identity, await login())
    alice = await login("alice", PASSWORD)
    response = await identity.put(
        "/api/v1/current-user",
        json={"full_name": "Alice", "password_hash": "x", "is_service_account": True},
        headers=bearer(alice),
    )
    assert response.status_code == 200
    assert response.json()["body"]["full_name"] == "Alice"
    assert response.json()["body"]["is_service_account"] is False
