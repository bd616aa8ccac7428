from __future__ import annotations

import base64
import json
import uuid

import httpx
import pytest

from agent_accounts.core.credentials import new_secret
from shared.logging import redact_text
from tests.agent_accounts.conftest import (
    Clock,
    NewKey,
    NewUser,
    bearer,
    idempotency_records,
    stored_rows,
)

ME = "/api/v1/accounts/me"


async def test_key_is_shown_once_and_authenticates_as_bearer(client: httpx.AsyncClient, admin):
    created = await client.post("/api/v1/api-keys", json={"name": "ci"}, headers=admin)
    assert created.status_code == 201
    assert created.headers["cache-control"] == "no-store"
    body = created.json()
    assert body["key"].startswith("KITKEY_")
    assert len(body["key"]) == 171
    assert (await client.get(ME, headers=bearer(body["key"]))).json()["name"] == "default"
    listed = (await client.get("/api/v1/api-keys", headers=admin)).json()
    assert [k["name"] for k in listed["items"]] == ["ci"]
    assert "key" not in listed["items"][0]
    assert "key" not in (await client.get(f"/api/v1/api-keys/{body['id']}", headers=admin)).json()


async def test_new_keys_start_with_kitkey_and_svckey_keys_issued_before_still_work(
    client: httpx.AsyncClient, new_key: NewKey
):
    issued = (await new_key())["key"]
    # A key issued before KITKEY_ became the prefix: the same id and secret (the stored
    # hash covers only the secret) under the old prefix.
    earlier = "SVCKEY_" + issued.removeprefix("KITKEY_")

    assert issued.startswith("KITKEY_")
    for key in (issued, earlier):
        assert (await client.get(ME, headers=bearer(key))).json()["name"] == "default"
        exchanged = await client.post(
            "/api/v1/login", data={"grant_type": "api-key"}, headers=bearer(key)
        )
        assert exchanged.status_code == 200, exchanged.text


def test_a_kitkey_key_is_masked_in_log_text():
    payload = json.dumps({"id": str(uuid.uuid4()), "key": new_secret()})
    encoded = base64.b64encode(payload.encode()).decode()

    assert encoded not in redact_text(f"login with KITKEY_{encoded} failed")


async def test_keys_are_stored_as_hashes_only(
    client: httpx.AsyncClient, new_key: NewKey, agent_settings
):
    body = await new_key()
    rows = await stored_rows(agent_settings, "SELECT * FROM api_keys")
    secret = body["key"]
    plain = json.loads(base64.b64decode(secret[len("SVCKEY_") :]))["key"]
    assert plain not in repr(rows)


async def test_duplicate_key_name_is_409(client: httpx.AsyncClient, admin, new_key: NewKey):
    await new_key(name="same")
    response = await client.post("/api/v1/api-keys", json={"name": "same"}, headers=admin)
    assert response.status_code == 409


async def test_list_shows_only_the_callers_keys(
    client: httpx.AsyncClient, new_key: NewKey, new_user: NewUser
):
    await new_key(name="admin-key")
    _, headers = await new_user()
    await new_key(headers, name="user-key")
    listed = (await client.get("/api/v1/api-keys", headers=headers)).json()
    assert [k["name"] for k in listed["items"]] == ["user-key"]


async def test_another_accounts_key_is_404(
    client: httpx.AsyncClient, new_key: NewKey, new_user: NewUser
):
    key = await new_key()
    _, headers = await new_user()
    assert (await client.get(f"/api/v1/api-keys/{key['id']}", headers=headers)).status_code == 404
    assert (
        await client.delete(f"/api/v1/api-keys/{key['id']}", headers=headers)
    ).status_code == 404


async def test_bad_keys_are_401_invalid_api_key(client: httpx.AsyncClient, new_key: NewKey):
    key = await new_key()
    for bad in ["SVCKEY_not-base64!", "SVCKEY_" + "A" * 40, key["key"][:-4] + "AAAA"]:
        response = await client.get(ME, headers=bearer(bad))
        assert response.status_code == 401
        assert response.json() == {"detail": "Invalid API key."}


async def test_deactivated_key_stops_and_ends_its_sessions(
    client: httpx.AsyncClient, admin, new_key: NewKey
):
    key = await new_key()
    session = await client.post(
        "/api/v1/login", data={"grant_type": "api-key"}, headers=bearer(key["key"])
    )
    assert session.status_code == 200
    session_headers = bearer(session.json()["access_token"])
    assert (await client.get(ME, headers=session_headers)).status_code == 200
    response = await client.patch(
        f"/api/v1/api-keys/{key['id']}", json={"active": False}, headers=admin
    )
    assert response.status_code == 200
    assert response.json()["active"] is False
    assert (await client.get(ME, headers=bearer(key["key"]))).status_code == 401
    assert (await client.get(ME, headers=session_headers)).status_code == 401


async def test_deleted_key_stops_and_ends_its_sessions(
    client: httpx.AsyncClient, admin, new_key: NewKey
):
    key = await new_key()
    token = (
        await client.post(
            "/api/v1/login", data={"grant_type": "api-key"}, headers=bearer(key["key"])
        )
    ).json()["access_token"]
    assert (await client.delete(f"/api/v1/api-keys/{key['id']}", headers=admin)).status_code == 204
    assert (await client.get(ME, headers=bearer(key["key"]))).status_code == 401
    assert (await client.get(ME, headers=bearer(token))).status_code == 401


async def test_rotation_keeps_the_old_key_for_the_retain_window_then_stops_it(
    client: httpx.AsyncClient, admin, new_key: NewKey, clock: Clock
):
    key = await new_key()
    rotated = await client.post(
        f"/api/v1/api-keys/{key['id']}/rotate", json={"retain_period_minutes": 5}, headers=admin
    )
    assert rotated.status_code == 200
    assert rotated.headers["cache-control"] == "no-store"
    new = rotated.json()["key"]
    assert new != key["key"]
    assert rotated.json()["last_rotated"] is not None
    clock.advance(minutes=4, seconds=59)
    assert (await client.get(ME, headers=bearer(key["key"]))).status_code == 200
    assert (await client.get(ME, headers=bearer(new))).status_code == 200
    clock.advance(seconds=1)
    assert (await client.get(ME, headers=bearer(key["key"]))).status_code == 401
    assert (await client.get(ME, headers=bearer(new))).status_code == 200


async def test_rotation_without_retain_stops_the_old_key_at_once(
    client: httpx.AsyncClient, admin, new_key: NewKey
):
    key = await new_key()
    first = await client.post(
        f"/api/v1/api-keys/{key['id']}/rotate", json={"retain_period_minutes": 5}, headers=admin
    )
    second = await client.post(f"/api/v1/api-keys/{key['id']}/rotate", headers=admin)
    assert second.status_code == 200
    assert (await client.get(ME, headers=bearer(key["key"]))).status_code == 401
    assert (await client.get(ME, headers=bearer(first.json()["key"]))).status_code == 401
    assert (await client.get(ME, headers=bearer(second.json()["key"]))).status_code == 200


async def test_negative_retain_period_is_422(client: httpx.AsyncClient, admin, new_key: NewKey):
    key = await new_key()
    response = await client.post(
        f"/api/v1/api-keys/{key['id']}/rotate", json={"retain_period_minutes": -1}, headers=admin
    )
    assert response.status_code == 422


async def test_last_used_is_recorded_at_most_once_per_interval(
    client: httpx.AsyncClient, admin, new_key: NewKey, clock: Clock
):
    key = await new_key()
    assert (await client.get(f"/api/v1/api-keys/{key['id']}", headers=admin)).json()[
        "last_used"
    ] is None
    await client.get(ME, headers=bearer(key["key"]))
    first = (await client.get(f"/api/v1/api-keys/{key['id']}", headers=admin)).json()["last_used"]
    assert first is not None
    clock.advance(seconds=10)
    await client.get(ME, headers=bearer(key["key"]))
    again = (await client.get(f"/api/v1/api-keys/{key['id']}", headers=admin)).json()["last_used"]
    assert again == first


async def test_admin_issues_keys_for_service_accounts(client: httpx.AsyncClient, admin):
    service = (
        await client.post("/api/v1/service-accounts", json={"name": "deployer"}, headers=admin)
    ).json()
    issued = await client.post(
        f"/api/v1/service-accounts/{service['id']}/api-keys",
        json={"name": "deployer-key"},
        headers=admin,
    )
    assert issued.status_code == 201
    assert issued.json()["owner_id"] == service["id"]
    me = await client.get(ME, headers=bearer(issued.json()["key"]))
    assert me.json()["name"] == "deployer"
    # The admin can rotate and deactivate it too.
    key_id = issued.json()["id"]
    assert (
        await client.post(f"/api/v1/api-keys/{key_id}/rotate", headers=admin)
    ).status_code == 200


async def test_non_admin_cannot_issue_keys_for_service_accounts(
    client: httpx.AsyncClient, admin, new_user: NewUser
):
    service = (
        await client.post("/api/v1/service-accounts", json={"name": "sa"}, headers=admin)
    ).json()
    _, headers = await new_user()
    response = await client.post(
        f"/api/v1/service-accounts/{service['id']}/api-keys", json={"name": "k"}, headers=headers
    )
    assert response.status_code == 403


async def test_inactive_service_account_keys_stop_working(client: httpx.AsyncClient, admin):
    service = (
        await client.post("/api/v1/service-accounts", json={"name": "sb"}, headers=admin)
    ).json()
    key = (
        await client.post(
            f"/api/v1/service-accounts/{service['id']}/api-keys",
            json={"name": "sb-key"},
            headers=admin,
        )
    ).json()
    await client.patch(
        f"/api/v1/service-accounts/{service['id']}", json={"active": False}, headers=admin
    )
    assert (await client.get(ME, headers=bearer(key["key"]))).status_code == 401


async def test_idempotency_key_replays_a_create_and_refuses_reuse(client: httpx.AsyncClient, admin):
    headers = {**admin, "Idempotency-Key": "5f0c6a66-3a64-4a55-9c55-0e8c9b3a0b11"}
    first = await client.post("/api/v1/service-accounts", json={"name": "idem"}, headers=headers)
    again = await client.post("/api/v1/service-accounts", json={"name": "idem"}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    other = await client.post("/api/v1/service-accounts", json={"name": "idem2"}, headers=headers)
    assert other.status_code == 422


async def test_retried_create_replays_the_same_key_kept_encrypted(
    client: httpx.AsyncClient, admin, agent_settings
):
    headers = {**admin, "Idempotency-Key": str(uuid.uuid4())}
    first = await client.post("/api/v1/api-keys", json={"name": "retried"}, headers=headers)
    again = await client.post("/api/v1/api-keys", json={"name": "retried"}, headers=headers)

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert again.headers["cache-control"] == "no-store"
    assert len((await client.get("/api/v1/api-keys", headers=admin)).json()["items"]) == 1
    assert (await client.get(ME, headers=bearer(again.json()["key"]))).status_code == 200
    [record] = await idempotency_records(agent_settings)
    secret = json.loads(base64.b64decode(first.json()["key"][len("SVCKEY_") :]))["key"]
    assert first.json()["key"].encode() not in record
    assert secret.encode() not in record


async def test_retried_rotate_replays_the_same_new_key(
    client: httpx.AsyncClient, admin, new_key: NewKey
):
    key = await new_key()
    headers = {**admin, "Idempotency-Key": str(uuid.uuid4())}
    path = f"/api/v1/api-keys/{key['id']}/rotate"
    first = await client.post(path, json={"retain_period_minutes": 5}, headers=headers)
    again = await client.post(path, json={"retain_period_minutes": 5}, headers=headers)

    assert first.status_code == again.status_code == 200
    assert again.json()["key"] == first.json()["key"] != key["key"]
    assert again.headers["idempotent-replayed"] == "true"
    # Rotated once: the first key is still inside its retain window.
    assert (await client.get(ME, headers=bearer(key["key"]))).status_code == 200
    assert (await client.get(ME, headers=bearer(first.json()["key"]))).status_code == 200


@pytest.mark.parametrize("settings_overrides", [{"server_secret_encryption_key": None}])
async def test_without_encryption_keys_a_retried_create_is_not_replayed(
    client: httpx.AsyncClient, admin, agent_settings
):
    headers = {**admin, "Idempotency-Key": str(uuid.uuid4())}
    first = await client.post("/api/v1/api-keys", json={"name": "retried"}, headers=headers)
    again = await client.post("/api/v1/api-keys", json={"name": "retried"}, headers=headers)

    assert first.status_code == 201
    assert again.status_code == 409  # it ran again
    assert await idempotency_records(agent_settings) == []
