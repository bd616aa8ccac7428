"""``/service_accounts``: the reference's shapes and errors; service accounts are users
rows that ``/users`` does not show."""

from __future__ import annotations

import httpx

from tests.identity.api_key.support import create_account
from tests.identity.conftest import Login, bearer
from tests.identity.device.support import create_user


async def test_create_answers_the_reference_shape(identity: httpx.AsyncClient, login: Login):
    admin = await login()
    account = await create_account(
        identity, admin, "ci-bot", full_name="CI", description="runs the nightly build"
    )
    assert set(account) == {"id", "name", "body", "metadata", "resources", "permission_denied"}
    assert account["name"] == "ci-bot"
    assert set(account["body"]) == {"created", "updated", "full_name", "active", "avatar_url"}
    assert account["body"]["active"] is True
    assert account["body"]["full_name"] == "CI"
    assert account["metadata"] == {
        "description": "runs the nightly build",
        "external_user_id": None,
    }


async def test_duplicate_name_is_409_even_against_a_user(identity: httpx.AsyncClient, login: Login):
    admin = await login()
    await create_account(identity, admin, "ci-bot")
    for name in ("ci-bot", "default"):
        response = await identity.post(
            "/api/v1/service_accounts", json={"name": name, "active": True}, headers=bearer(admin)
        )
        assert response.status_code == 409, response.text
        assert response.json()["detail"][0] == "EntityExistsError"


async def test_bad_bodies_are_422(identity: httpx.AsyncClient, login: Login):
    admin = await login()
    for body in ({"name": "no-active"}, {"name": "", "active": True}, {"active": True}):
        response = await identity.post("/api/v1/service_accounts", json=body, headers=bearer(admin))
        assert response.status_code == 422, (body, response.text)
    response = await identity.put(
        "/api/v1/service_accounts/x", json={"active": "maybe"}, headers=bearer(admin)
    )
    assert response.status_code == 422


async def test_only_admins_create_update_or_delete(identity: httpx.AsyncClient, login: Login):
    admin = await login()
    account = await create_account(identity, admin)
    password = await create_user(identity, admin, "alice")
    alice = bearer(await login("alice", password))
    one = f"/api/v1/service_accounts/{account['id']}"
    refused = [
        await identity.post(
            "/api/v1/service_accounts", json={"name": "x", "active": True}, headers=alice
        ),
        await identity.put(one, json={"active": False}, headers=alice),
        await identity.delete(one, headers=alice),
    ]
    assert [r.status_code for r in refused] == [403, 403, 403]
    assert (await identity.get(one, headers=alice)).status_code == 200


async def test_get_by_name_or_id_and_unknown_is_404(identity: httpx.AsyncClient, login: Login):
    token = await login()
    admin = bearer(token)
    account = await create_account(identity, token)
    by_name = await identity.get("/api/v1/service_accounts/ci-bot", headers=admin)
    by_id = await identity.get(f"/api/v1/service_accounts/{account['id']}", headers=admin)
    assert by_name.json() == by_id.json() == account
    missing = await identity.get("/api/v1/service_accounts/nobody", headers=admin)
    assert missing.status_code == 404
    assert missing.json()["detail"] == [
        "KeyError",
        "No service account with the 'nobody' name or ID was found",
    ]
    # A user is no service account.
    assert (
        await identity.get("/api/v1/service_accounts/default", headers=admin)
    ).status_code == 404


async def test_list_filters_and_users_list_hides_them(identity: httpx.AsyncClient, login: Login):
    token = await login()
    admin = bearer(token)
    await create_account(identity, token, "ci-bot")
    await create_account(identity, token, "old-bot", active=False)
    listed = await identity.get("/api/v1/service_accounts?active=false", headers=admin)
    assert [a["name"] for a in listed.json()["items"]] == ["old-bot"]
    contains = await identity.get("/api/v1/service_accounts?name=contains:bot", headers=admin)
    assert contains.json()["total"] == 2
    assert contains.json()["items"][0]["metadata"] is None
    users = await identity.get("/api/v1/users", headers=admin)
    assert [u["name"] for u in users.json()["items"]] == ["default"]
    bad = await identity.get("/api/v1/service_accounts?created=notadate", headers=admin)
    assert bad.status_code == 422


async def test_users_endpoints_show_a_service_account_by_id_only(
    identity: httpx.AsyncClient, login: Login
):
    token = await login()
    admin = bearer(token)
    account = await create_account(identity, token)
    as_user = await identity.get(f"/api/v1/users/{account['id']}", headers=admin)
    assert as_user.status_code == 200
    assert as_user.json()["body"]["is_service_account"] is True
    assert (await identity.get("/api/v1/users/ci-bot", headers=admin)).status_code == 404
    changed = await identity.put(
        f"/api/v1/users/{account['id']}", json={"password": "a password long enough"}, headers=admin
    )
    assert changed.status_code == 404


async def test_update_and_delete(identity: httpx.AsyncClient, login: Login):
    token = await login()
    admin = bearer(token)
    account = await create_account(identity, token, "ci-bot")
    await create_account(identity, token, "other-bot")
    one = f"/api/v1/service_accounts/{account['id']}"
    clash = await identity.put(one, json={"name": "other-bot"}, headers=admin)
    assert clash.status_code == 409
    updated = await identity.put(
        one, json={"name": "ci", "description": "d", "active": False}, headers=admin
    )
    assert updated.status_code == 200, updated.text
    assert updated.json()["name"] == "ci"
    assert updated.json()["body"]["active"] is False
    assert updated.json()["metadata"]["description"] == "d"
    assert (await identity.delete(one, headers=admin)).json() is None
    assert (await identity.get(one, headers=admin)).status_code == 404
    assert (await identity.delete(one, headers=admin)).status_code == 404
