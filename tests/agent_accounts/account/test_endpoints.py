from __future__ import annotations

import asyncio
import datetime as dt
import json
import uuid
from typing import Any

import httpx
import pytest
from argon2 import PasswordHasher

from agent_accounts.app import create_app
from agent_accounts.settings import Settings
from tests.agent_accounts.conftest import (
    ADMIN,
    ADMIN_PASSWORD,
    Clock,
    Login,
    NewUser,
    bearer,
    stored_rows,
)
from tests.support.asgi import client_for, running_together


async def test_default_admin_is_created_at_first_start(client: httpx.AsyncClient, admin):
    me = (await client.get("/api/v1/accounts/me", headers=admin)).json()
    assert me["name"] == ADMIN
    assert me["is_admin"] is True
    assert me["active"] is True
    assert me["is_service_account"] is False


async def test_default_account_without_a_password_gets_a_printed_random_one_once(
    agent_settings: Settings, capsys: pytest.CaptureFixture[str]
):
    settings = agent_settings.model_copy(update={"server_default_account_password": None})
    async with client_for(create_app(settings)):
        pass
    printed = capsys.readouterr().out
    assert f"Created the first admin '{ADMIN}'" in printed
    password = printed.split("generated password: ")[1].split()[0]
    async with client_for(create_app(settings)) as client:
        response = await client.post(
            "/api/v1/login",
            data={"grant_type": "password", "username": ADMIN, "password": password},
        )
        assert response.status_code == 200, response.text
    assert "generated password" not in capsys.readouterr().out
    (stored,) = await stored_rows(settings, "SELECT password_hash FROM accounts")
    assert password not in stored[0]


async def test_replicas_starting_together_create_the_default_account_once(
    agent_settings: Settings, capsys: pytest.CaptureFixture[str]
):
    settings = agent_settings.model_copy(update={"server_default_account_password": None})
    async with running_together(*(create_app(settings) for _ in range(3))):
        pass
    assert capsys.readouterr().out.count("generated password: ") == 1
    assert len(await stored_rows(settings, "SELECT id FROM accounts")) == 1


async def test_configured_default_account_password_is_used_and_not_printed(
    agent_settings: Settings, capsys: pytest.CaptureFixture[str]
):
    async with client_for(create_app(agent_settings)) as client:
        password = agent_settings.server_default_account_password
        assert password is not None
        response = await client.post(
            "/api/v1/login",
            data={
                "grant_type": "password",
                "username": ADMIN,
                "password": password.get_secret_value(),
            },
        )
    assert response.status_code == 200, response.text
    printed = capsys.readouterr().out
    assert "generated password" not in printed
    assert password.get_secret_value() not in printed


async def test_user_created_with_a_password_is_active(client: httpx.AsyncClient, admin):
    response = await client.post(
        "/api/v1/users", json={"name": "alice", "password": "alice-password"}, headers=admin
    )
    assert response.status_code == 201
    body = response.json()
    assert body["active"] is True
    assert "activation_token" not in body


async def test_activation_then_login_as_the_kitaru_ui_does_it(
    client: httpx.AsyncClient, admin, agent_settings: Settings, clock: Clock
):
    # The UI's members page, then the activation link's page: activate without a
    # session, then log in with a form that names no grant.
    created = await client.post(
        "/api/v1/users", json={"name": "carol", "email": None, "is_admin": False}, headers=admin
    )
    user = created.json()
    activated = await client.post(
        f"/api/v1/users/{user['id']}/activate",
        json={"activation_token": user["activation_token"], "password": "carol-pass-1"},
    )
    assert activated.status_code == 200, activated.text
    # The UI's next requests may reach another replica, whose clock is a little behind.
    behind = Clock()
    behind.now = clock.now - dt.timedelta(milliseconds=20)
    async with client_for(create_app(agent_settings, clock=behind)) as replica:
        login = await replica.post(
            "/api/v1/login",
            data={"username": activated.json()["name"], "password": "carol-pass-1"},
        )
        assert login.status_code == 200, login.text
        me = await replica.get("/api/v1/accounts/me", headers=bearer(login.json()["access_token"]))

    assert me.status_code == 200, me.text
    assert me.json()["name"] == "carol"
    assert me.json()["active"] is True


async def test_activating_an_account_made_active_again_at_start_up_ends_its_sessions(
    client: httpx.AsyncClient, agent_settings: Settings, clock: Clock, new_user: NewUser
):
    _, other_admin = await new_user(is_admin=True)
    me = (await client.get("/api/v1/accounts/me", headers=other_admin)).json()
    default = (await client.get("/api/v1/accounts", headers=other_admin)).json()["items"]
    [default_id] = [a["id"] for a in default if a["name"] == ADMIN and a["id"] != me["id"]]
    deactivated = await client.post(f"/api/v1/users/{default_id}/deactivate", headers=other_admin)
    token = deactivated.json()["activation_token"]
    clock.advance(seconds=1)
    # A restart makes the default admin active again, its activation token still unused.
    async with client_for(create_app(agent_settings, clock=clock)) as restarted:
        form = {"username": ADMIN, "password": ADMIN_PASSWORD}
        session = (await restarted.post("/api/v1/login", data=form)).json()["access_token"]
        clock.advance(seconds=1)
        activated = await restarted.post(
            f"/api/v1/users/{default_id}/activate",
            json={"activation_token": token, "password": "a-new-password"},
        )
        assert activated.status_code == 200, activated.text
        ended = await restarted.get("/api/v1/accounts/me", headers=bearer(session))

    assert ended.status_code == 401


async def test_user_created_without_password_gets_a_one_time_activation_token(
    client: httpx.AsyncClient, admin, login: Login
):
    created = await client.post("/api/v1/users", json={"name": "bob"}, headers=admin)
    assert created.status_code == 201
    assert created.headers["cache-control"] == "no-store"
    body = created.json()
    assert body["active"] is False
    token = body["activation_token"]
    assert len(token) == 64
    path = f"/api/v1/users/{body['id']}/activate"
    activated = await client.post(path, json={"activation_token": token, "password": "bob-pass-1"})
    assert activated.status_code == 200
    assert activated.json()["active"] is True
    assert await login("bob", "bob-pass-1")
    reused = await client.post(path, json={"activation_token": token, "password": "other-pass"})
    assert reused.status_code == 403
    assert reused.json() == {"detail": "The activation token is incorrect"}


async def test_activation_token_expires(client: httpx.AsyncClient, admin, clock: Clock):
    body = (await client.post("/api/v1/users", json={"name": "late"}, headers=admin)).json()
    clock.advance(hours=24, seconds=1)
    response = await client.post(
        f"/api/v1/users/{body['id']}/activate",
        json={"activation_token": body["activation_token"], "password": "late-password"},
    )
    assert response.status_code == 403


async def test_wrong_activation_token_is_403(client: httpx.AsyncClient, admin):
    body = (await client.post("/api/v1/users", json={"name": "carol"}, headers=admin)).json()
    response = await client.post(
        f"/api/v1/users/{body['id']}/activate",
        json={"activation_token": "0" * 64, "password": "carol-password"},
    )
    assert response.status_code == 403


async def test_non_admin_cannot_create_accounts(client: httpx.AsyncClient, new_user: NewUser):
    _, headers = await new_user()
    response = await client.post("/api/v1/users", json={"name": "x"}, headers=headers)
    assert response.status_code == 403
    assert response.json() == {"detail": "Insufficient permissions for account:create"}
    response = await client.post("/api/v1/service-accounts", json={"name": "x"}, headers=headers)
    assert response.status_code == 403


async def test_duplicate_user_name_is_409_but_a_service_account_may_share_it(
    client: httpx.AsyncClient, admin
):
    await client.post(
        "/api/v1/users", json={"name": "dup", "password": "dup-pass-1"}, headers=admin
    )
    again = await client.post("/api/v1/users", json={"name": "dup"}, headers=admin)
    assert again.status_code == 409
    service = await client.post("/api/v1/service-accounts", json={"name": "dup"}, headers=admin)
    assert service.status_code == 201


@pytest.mark.parametrize("name", ["", "-lead", "trail-", "has space", "x" * 256, "ümlaut"])
async def test_invalid_names_are_422(client: httpx.AsyncClient, admin, name: str):
    response = await client.post("/api/v1/users", json={"name": name}, headers=admin)
    assert response.status_code == 422


async def test_unknown_request_fields_are_422(client: httpx.AsyncClient, admin):
    response = await client.post(
        "/api/v1/users", json={"name": "eve", "is_service_account": True}, headers=admin
    )
    assert response.status_code == 422


async def test_passwords_are_argon2id_without_a_72_byte_cap(
    client: httpx.AsyncClient, admin, login: Login, agent_settings
):
    password = "ü" * 60  # 120 UTF-8 bytes
    await client.post("/api/v1/users", json={"name": "long", "password": password}, headers=admin)
    assert await login("long", password)
    response = await client.post(
        "/api/v1/login",
        data={"grant_type": "password", "username": "long", "password": password[:-1]},
    )
    assert response.status_code == 401
    [(stored,)] = await stored_rows(
        agent_settings, "SELECT password_hash FROM accounts WHERE name = 'long'"
    )
    assert stored.startswith("$argon2id$")
    assert PasswordHasher().verify(stored, password)


async def test_deactivate_locks_the_user_out_and_returns_a_fresh_activation_token(
    client: httpx.AsyncClient, admin, new_user: NewUser, new_key, login: Login
):
    user, headers = await new_user("dana")
    key = await new_key(headers)
    assert (await client.get("/api/v1/accounts/me", headers=headers)).status_code == 200
    response = await client.post(f"/api/v1/users/{user['id']}/deactivate", headers=admin)
    assert response.status_code == 200
    body = response.json()
    assert body["active"] is False
    assert len(body["activation_token"]) == 64
    # Live session and API key stop at once.
    assert (await client.get("/api/v1/accounts/me", headers=headers)).status_code == 401
    assert (await client.get("/api/v1/accounts/me", headers=bearer(key["key"]))).status_code == 401
    # Re-activation does not bring the old session back.
    await client.post(
        f"/api/v1/users/{user['id']}/activate",
        json={"activation_token": body["activation_token"], "password": "dana-new-pass"},
    )
    assert (await client.get("/api/v1/accounts/me", headers=headers)).status_code == 401
    assert await login("dana", "dana-new-pass")


async def test_deactivating_yourself_is_403(client: httpx.AsyncClient, admin):
    me = (await client.get("/api/v1/accounts/me", headers=admin)).json()
    response = await client.post(f"/api/v1/users/{me['id']}/deactivate", headers=admin)
    assert response.status_code == 403


async def test_non_admin_cannot_deactivate(client: httpx.AsyncClient, new_user: NewUser):
    other, _ = await new_user()
    _, headers = await new_user()
    response = await client.post(f"/api/v1/users/{other['id']}/deactivate", headers=headers)
    assert response.status_code == 403
    assert response.json() == {"detail": "Insufficient permissions for account:deactivate"}


async def test_users_routes_answer_404_for_service_accounts(client: httpx.AsyncClient, admin):
    service = (
        await client.post("/api/v1/service-accounts", json={"name": "bot"}, headers=admin)
    ).json()
    assert (
        await client.post(f"/api/v1/users/{service['id']}/deactivate", headers=admin)
    ).status_code == 404
    patch = await client.patch(
        f"/api/v1/users/{service['id']}", json={"is_admin": True}, headers=admin
    )
    assert patch.status_code == 404


async def test_service_account_create_and_update_active(client: httpx.AsyncClient, admin):
    created = await client.post(
        "/api/v1/service-accounts",
        json={"name": "ci-bot", "email": "ci@example.com"},
        headers=admin,
    )
    assert created.status_code == 201
    body = created.json()
    assert body["is_service_account"] is True
    assert body["active"] is True
    assert body["is_admin"] is False
    updated = await client.patch(
        f"/api/v1/service-accounts/{body['id']}",
        json={"active": False, "metadata": {"team": "infra"}},
        headers=admin,
    )
    assert updated.status_code == 200
    assert updated.json()["active"] is False
    assert updated.json()["metadata"] == {"team": "infra"}


async def test_service_account_patch_on_a_user_id_is_404(client: httpx.AsyncClient, admin):
    me = (await client.get("/api/v1/accounts/me", headers=admin)).json()
    response = await client.patch(
        f"/api/v1/service-accounts/{me['id']}", json={"active": False}, headers=admin
    )
    assert response.status_code == 404


async def test_non_admin_cannot_update_service_accounts(
    client: httpx.AsyncClient, admin, new_user: NewUser
):
    service = (
        await client.post("/api/v1/service-accounts", json={"name": "bot2"}, headers=admin)
    ).json()
    _, headers = await new_user()
    response = await client.patch(
        f"/api/v1/service-accounts/{service['id']}", json={"active": False}, headers=headers
    )
    assert response.status_code == 403


async def test_an_account_cannot_change_its_own_admin_flag(client: httpx.AsyncClient, admin):
    me = (await client.get("/api/v1/accounts/me", headers=admin)).json()
    response = await client.patch(
        f"/api/v1/users/{me['id']}", json={"is_admin": False}, headers=admin
    )
    assert response.status_code == 403


async def test_admin_grants_admin_but_a_user_cannot(
    client: httpx.AsyncClient, admin, new_user: NewUser
):
    target, _ = await new_user()
    _, plain = await new_user()
    denied = await client.patch(
        f"/api/v1/users/{target['id']}", json={"is_admin": True}, headers=plain
    )
    assert denied.status_code == 403
    granted = await client.patch(
        f"/api/v1/users/{target['id']}", json={"is_admin": True}, headers=admin
    )
    assert granted.status_code == 200
    assert granted.json()["is_admin"] is True


async def test_password_change_needs_the_old_password(
    client: httpx.AsyncClient, new_user: NewUser, login: Login
):
    user, headers = await new_user("frank")
    wrong = await client.patch(
        f"/api/v1/users/{user['id']}",
        json={"password": "frank-new-pw", "old_password": "nope"},
        headers=headers,
    )
    assert wrong.status_code == 403


async def test_accounts_cannot_be_deleted(client: httpx.AsyncClient, admin):
    me = (await client.get("/api/v1/accounts/me", headers=admin)).json()
    response = await client.delete(f"/api/v1/accounts/{me['id']}", headers=admin)
    assert response.status_code == 405


async def test_every_account_may_list_and_read_accounts(
    client: httpx.AsyncClient, admin, new_user: NewUser
):
    user, headers = await new_user()
    listed = await client.get("/api/v1/accounts", headers=headers)
    assert listed.status_code == 200
    assert user["id"] in [a["id"] for a in listed.json()["items"]]
    one = await client.get(f"/api/v1/accounts/{user['id']}", headers=headers)
    assert one.json()["name"] == user["name"]


async def test_account_list_pages_with_cursor_and_filters(client: httpx.AsyncClient, admin):
    for i in range(5):
        await client.post("/api/v1/service-accounts", json={"name": f"page-{i}"}, headers=admin)
    query = {
        "size": "2",
        "sort": "name:asc",
        "filter": json.dumps(
            {"and": [{"field": "name", "op": "startswith", "value": "page-"},
                     {"field": "is_service_account", "op": "eq", "value": True}]}
        ),
    }  # fmt: skip
    names: list[str] = []
    cursor = None
    while True:
        params = {**query, **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/api/v1/accounts", params=params, headers=admin)).json()
        names += [a["name"] for a in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert names == [f"page-{i}" for i in range(5)]


@pytest.mark.parametrize(
    "params",
    [
        {"size": "0"},
        {"size": "1001"},
        {"sort": "password_hash:asc"},
        {"sort": "name"},
        {"filter": "{not json"},
        {"filter": '{"field": "password_hash", "op": "eq", "value": "x"}'},
        {"filter": '{"field": "name", "op": "like", "value": "x"}'},
        {"cursor": "garbage"},
    ],
)
async def test_bad_list_parameters_are_422(client: httpx.AsyncClient, admin, params):
    response = await client.get("/api/v1/accounts", params=params, headers=admin)
    assert response.status_code == 422


async def test_requests_without_credentials_are_401(client: httpx.AsyncClient):
    response = await client.get("/api/v1/accounts")
    assert response.status_code == 401
    assert response.json() == {"detail": "Missing bearer credential."}


async def test_retried_user_create_replays_the_same_activation_token(
    client: httpx.AsyncClient, admin
):
    headers = {**admin, "Idempotency-Key": str(uuid.uuid4())}
    first = await client.post("/api/v1/users", json={"name": "retried"}, headers=headers)
    again = await client.post("/api/v1/users", json={"name": "retried"}, headers=headers)

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    activated = await client.post(
        f"/api/v1/users/{first.json()['id']}/activate",
        json={"activation_token": again.json()["activation_token"], "password": "pw-retried"},
    )
    assert activated.status_code == 200


async def _user_with_password(
    client: httpx.AsyncClient, admin: dict[str, str], name: str, password: str
) -> dict[str, Any]:
    response = await client.post(
        "/api/v1/users", json={"name": name, "password": password}, headers=admin
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_password_change_with_the_old_password_switches_the_login(
    client: httpx.AsyncClient, admin, login: Login
):
    user = await _user_with_password(client, admin, "grace", "grace-old-password")
    headers = bearer(await login("grace", "grace-old-password"))

    changed = await client.patch(
        f"/api/v1/users/{user['id']}",
        json={"password": "grace-new-password", "old_password": "grace-old-password"},
        headers=headers,
    )
    assert changed.status_code == 200
    assert "password" not in changed.json()
    assert await login("grace", "grace-new-password")
    old = await client.post("/api/v1/login", data={"grant_type": "password",
                                                   "username": "grace",
                                                   "password": "grace-old-password"})  # fmt: skip
    assert old.status_code == 401


async def test_only_the_account_itself_changes_its_password_or_metadata(
    client: httpx.AsyncClient, admin, new_user: NewUser
):
    user, headers = await new_user()
    path = f"/api/v1/users/{user['id']}"

    own = await client.patch(path, json={"metadata": {"team": "ml", "n": 1}}, headers=headers)
    assert own.status_code == 200
    assert own.json()["metadata"] == {"team": "ml", "n": 1}
    assert (await client.get(f"/api/v1/accounts/{user['id']}", headers=admin)).json()[
        "metadata"
    ] == {"team": "ml", "n": 1}
    by_admin = await client.patch(path, json={"metadata": {"team": "x"}}, headers=admin)
    assert by_admin.status_code == 403
    password = await client.patch(
        path, json={"password": "another-long-password", "old_password": "x"}, headers=admin
    )
    assert password.status_code == 403


async def test_user_update_of_an_unknown_user_is_404_and_bad_bodies_422(
    client: httpx.AsyncClient, admin
):
    me = (await client.get("/api/v1/accounts/me", headers=admin)).json()
    unknown = await client.patch(
        "/api/v1/users/01900000-0000-7000-8000-000000000000", json={"metadata": {}}, headers=admin
    )
    assert unknown.status_code == 404
    path = f"/api/v1/users/{me['id']}"
    assert (await client.patch(path, json={"name": "renamed"}, headers=admin)).status_code == 422
    assert (await client.patch(path, json={"metadata": [1]}, headers=admin)).status_code == 422


async def test_concurrent_creates_of_one_name_answer_one_201_and_one_409(
    client: httpx.AsyncClient, admin
):
    async def create() -> httpx.Response:
        return await client.post(
            "/api/v1/users", json={"name": "twin", "password": "twin-password-1"}, headers=admin
        )

    answers = sorted(r.status_code for r in await asyncio.gather(create(), create()))
    assert answers == [201, 409]
