"""``/service_accounts/{id}/api_keys`` and the ``zenml-api-key`` login: the key shown
once and kept only as a hash, the reference's shapes and errors, and rotation's grace
window."""

from __future__ import annotations

import base64
import json
import uuid

import httpx
from sqlalchemy import text

from tests.identity.api_key.support import (
    create_account,
    create_key,
    encoded,
    key_login,
    key_token,
    rotate,
)
from tests.identity.conftest import Clock, Login, bearer
from tests.support.asgi import LifespanApp


def secret_of(key: str) -> str:
    """The secret inside a ``ZENKEY_`` key (the zenml client's encoding)."""
    assert key.startswith("ZENKEY_")
    decoded = json.loads(base64.b64decode(key.removeprefix("ZENKEY_")))
    assert set(decoded) == {"id", "key"}
    secret: str = decoded["key"]
    return secret


async def test_key_is_shown_once_and_stored_hashed(
    identity: httpx.AsyncClient, identity_app: LifespanApp, login: Login
):
    admin = await login()
    account = await create_account(identity, admin)
    created = await create_key(identity, admin, account["id"])
    key = created["body"]["key"]
    assert secret_of(key)
    assert created["body"]["service_account"]["name"] == "ci-bot"
    assert created["metadata"] == {
        "description": "for CI",
        "retain_period_minutes": 0,
        "last_login": None,
        "last_rotated": None,
    }
    keys = f"/api/v1/service_accounts/{account['id']}/api_keys"
    answers = [
        await identity.get(keys, headers=bearer(admin)),
        await identity.get(f"{keys}/ci", headers=bearer(admin)),
        await identity.get(f"{keys}/{created['id']}?hydrate=false", headers=bearer(admin)),
    ]
    for answer in answers:
        assert answer.status_code == 200
        assert secret_of(key) not in answer.text
        assert "ZENKEY_" not in answer.text
    async with identity_app.state["engine"].connect() as connection:
        rows = await connection.execute(text("SELECT * FROM service_account_api_keys"))
        row = rows.mappings().one()
    assert secret_of(key) not in str(dict(row))
    assert len(row["key_hash"]) == 64


async def test_key_logs_the_service_account_in(identity: httpx.AsyncClient, login: Login):
    admin = await login()
    account = await create_account(identity, admin)
    created = await create_key(identity, admin, account["id"])
    response = await key_login(identity, created["body"]["key"])
    assert response.status_code == 200, response.text
    assert response.json()["device_id"] is None
    assert "set-cookie" not in response.headers
    token = response.json()["access_token"]
    me = await identity.get("/api/v1/current-user", headers=bearer(token))
    assert me.json()["id"] == account["id"]
    assert me.json()["body"]["is_service_account"] is True
    assert me.json()["body"]["is_admin"] is False
    key = await identity.get(
        f"/api/v1/service_accounts/{account['id']}/api_keys/ci", headers=bearer(admin)
    )
    assert key.json()["metadata"]["last_login"] is not None
    # The key alone (no grant_type), as the reference infers it.
    inferred = await identity.post("/api/v1/login", data={"password": created["body"]["key"]})
    assert inferred.status_code == 200


async def test_bad_keys_are_refused_in_the_reference_shape(
    identity: httpx.AsyncClient, login: Login
):
    admin = await login()
    account = await create_account(identity, admin)
    created = await create_key(identity, admin, account["id"])
    missing = await identity.post("/api/v1/login", data={"grant_type": "zenml-api-key"})
    assert missing.status_code == 400
    assert missing.json() == {"detail": "API key is required."}
    for garbage in ("ZENKEY_not-base64!", "hello", "ZENKEY_" + base64.b64encode(b"{}").decode()):
        refused = await key_login(identity, garbage)
        assert refused.status_code == 401
        assert refused.json()["detail"] == [
            "CredentialsNotValid",
            "Authentication error: error decoding API key",
        ]
    forged = encoded(created["id"], "0" * 64)
    wrong = await key_login(identity, forged)
    assert wrong.status_code == 401
    assert wrong.json()["detail"][1] == (
        "Authentication error: could not verify key value for API key ci"
    )
    unknown_id = str(uuid.uuid4())
    unknown = encoded(unknown_id, "0" * 64)
    assert (await key_login(identity, unknown)).json()["detail"][1] == (
        f"Authentication error: error retrieving API key {unknown_id}"
    )


async def test_the_list_s_service_account_is_the_path_s_whatever_is_sent(
    identity: httpx.AsyncClient, login: Login
):
    token = await login()
    ci = await create_account(identity, token)
    other = await create_account(identity, token, "other-bot")
    key = await create_key(identity, token, ci["id"])
    await create_key(identity, token, other["id"], "deploy")
    keys = f"/api/v1/service_accounts/{ci['id']}/api_keys"
    for account in (ci, other):  # the reference's server sets it to the path's account
        params = {"service_account": account["id"]}
        response = await identity.get(keys, params=params, headers=bearer(token))
        assert response.status_code == 200, response.text
        assert [k["id"] for k in response.json()["items"]] == [key["id"]]
    for value in ("ci-bot", "", "equals:" + ci["id"]):
        refused = await identity.get(keys, params={"service_account": value}, headers=bearer(token))
        assert refused.status_code == 422, value
        assert refused.json()["detail"][0]["loc"] == ["query", "service_account"]


async def test_bad_requests_are_404_409_422(identity: httpx.AsyncClient, login: Login):
    token = await login()
    admin = bearer(token)
    account = await create_account(identity, token)
    keys = f"/api/v1/service_accounts/{account['id']}/api_keys"
    await create_key(identity, token, account["id"])
    duplicate = await identity.post(keys, json={"name": "ci"}, headers=admin)
    assert duplicate.status_code == 409
    assert duplicate.json()["detail"][0] == "EntityExistsError"
    nobody = await identity.post(
        f"/api/v1/service_accounts/{uuid.uuid4()}/api_keys", json={"name": "x"}, headers=admin
    )
    assert nobody.status_code == 404
    assert nobody.json()["detail"][0] == "KeyError"
    not_uuid = await identity.get("/api/v1/service_accounts/ci-bot/api_keys", headers=admin)
    assert not_uuid.status_code == 422
    assert (await identity.post(keys, json={}, headers=admin)).status_code == 422
    too_long = await identity.put(
        f"{keys}/ci/rotate", json={"retain_period_minutes": 10**9}, headers=admin
    )
    assert too_long.status_code == 422
    unknown = await identity.get(f"{keys}/nope", headers=admin)
    assert unknown.status_code == 404
    assert unknown.json()["detail"][1] == (
        f"An API key with ID or name 'nope' is not configured for service account with ID "
        f"'{account['id']}'."
    )
    # A user's id is no service account's.
    me = (await identity.get("/api/v1/current-user", headers=admin)).json()["id"]
    users_keys = await identity.get(f"/api/v1/service_accounts/{me}/api_keys", headers=admin)
    assert users_keys.status_code == 404


async def test_update_renames_and_deactivates(identity: httpx.AsyncClient, login: Login):
    admin = await login()
    account = await create_account(identity, admin)
    created = await create_key(identity, admin, account["id"])
    await create_key(identity, admin, account["id"], "other")
    one = f"/api/v1/service_accounts/{account['id']}/api_keys/{created['id']}"
    clash = await identity.put(one, json={"name": "other"}, headers=bearer(admin))
    assert clash.status_code == 409
    updated = await identity.put(
        one, json={"name": "ci2", "description": "new", "active": False}, headers=bearer(admin)
    )
    assert updated.status_code == 200
    assert updated.json()["name"] == "ci2"
    assert updated.json()["body"]["active"] is False
    assert updated.json()["body"]["key"] is None
    refused = await key_login(identity, created["body"]["key"])
    assert refused.json()["detail"][1] == (
        "Authentication error: API key ci2 associated with service account ci-bot is not active"
    )
    listed = await identity.get(
        f"/api/v1/service_accounts/{account['id']}/api_keys?active=true", headers=bearer(admin)
    )
    assert [k["name"] for k in listed.json()["items"]] == ["other"]


async def test_rotation_keeps_the_old_key_for_its_grace_window(
    identity: httpx.AsyncClient, login: Login, clock: Clock
):
    admin = await login()
    account = await create_account(identity, admin)
    created = await create_key(identity, admin, account["id"])
    old_key = created["body"]["key"]
    old_token = await key_token(identity, old_key)
    rotated = await rotate(identity, admin, account["id"], created["id"], retain_period_minutes=10)
    new_key = rotated["body"]["key"]
    assert new_key != old_key
    assert rotated["metadata"]["last_rotated"] is not None
    assert rotated["metadata"]["retain_period_minutes"] == 10

    in_window = await key_token(identity, old_key)
    new_token = await key_token(identity, new_key)
    for token in (old_token, in_window, new_token):
        assert (
            await identity.get("/api/v1/current-user", headers=bearer(token))
        ).status_code == 200

    clock.advance(minutes=11)
    assert (await key_login(identity, old_key)).status_code == 401
    for token in (old_token, in_window):
        late = await identity.get("/api/v1/current-user", headers=bearer(token))
        assert late.status_code == 401
    assert (
        await identity.get("/api/v1/current-user", headers=bearer(new_token))
    ).status_code == 200


async def test_rotation_without_grace_retires_every_earlier_key_at_once(
    identity: httpx.AsyncClient, login: Login
):
    admin = await login()
    account = await create_account(identity, admin)
    created = await create_key(identity, admin, account["id"])
    first = created["body"]["key"]
    second = (await rotate(identity, admin, account["id"], "ci", retain_period_minutes=60))["body"]
    third = (await rotate(identity, admin, account["id"], "ci"))["body"]["key"]
    assert [(await key_login(identity, k)).status_code for k in (first, second["key"], third)] == [
        401,
        401,
        200,
    ]


async def test_rotation_with_a_negative_grace_keeps_no_old_key(
    identity: httpx.AsyncClient, login: Login
):
    admin = await login()
    account = await create_account(identity, admin)
    old = (await create_key(identity, admin, account["id"]))["body"]["key"]
    rotated = await rotate(identity, admin, account["id"], "ci", retain_period_minutes=-5)
    assert rotated["metadata"]["retain_period_minutes"] == 0
    assert (await key_login(identity, old)).status_code == 401
    assert (await key_login(identity, rotated["body"]["key"])).status_code == 200


async def test_service_account_cannot_use_devices_or_set_a_password(
    identity: httpx.AsyncClient, login: Login
):
    admin = await login()
    account = await create_account(identity, admin)
    token = await key_token(
        identity, (await create_key(identity, admin, account["id"]))["body"]["key"]
    )
    changed = await identity.put(
        "/api/v1/current-user", json={"password": "a password long enough"}, headers=bearer(token)
    )
    assert changed.status_code == 404
    password_login = await identity.post(
        "/api/v1/login", data={"username": "ci-bot", "password": "a password long enough"}
    )
    assert password_login.status_code == 401
