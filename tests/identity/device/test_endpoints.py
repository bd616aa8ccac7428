"""``/device_authorization`` and ``/devices``: the browser side of the device flow and the
caller's authorized devices."""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from identity.app import create_app
from identity.settings import Settings
from tests.identity.conftest import ADMIN, Clock, Login, bearer, make_settings
from tests.identity.device.support import (
    authorize,
    create_user,
    device_id,
    device_login,
    poll,
    verify,
)
from tests.support.asgi import client_for

ENVELOPE = ["body", "metadata", "resources", "id", "permission_denied"]


# Authorization


async def test_authorization_answers_codes_of_the_reference_lengths(
    identity: httpx.AsyncClient,
):
    body = await authorize(identity)
    assert re.fullmatch(r"[0-9a-f]{64}", body["device_code"])
    assert re.fullmatch(r"[0-9a-f]{32}", body["user_code"])
    assert body["expires_in"] == 300
    assert body["interval"] == 5
    assert body["verification_uri"] == "/devices/verify"
    complete = httpx.URL(body["verification_uri_complete"])
    assert complete.path == "/devices/verify"
    assert complete.params["user_code"] == body["user_code"]
    uuid.UUID(complete.params["device_id"])


async def test_authorization_response_is_never_cached_and_has_security_headers(
    identity: httpx.AsyncClient,
):
    response = await identity.post(
        "/api/v1/device_authorization", data={"client_id": str(uuid.uuid4())}
    )
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["pragma"] == "no-cache"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "SAMEORIGIN"
    assert response.headers["strict-transport-security"].startswith("max-age=63072000")


@pytest.mark.parametrize("data", [{}, {"client_id": "not-a-uuid"}])
async def test_authorization_without_a_valid_client_id_is_422(
    identity: httpx.AsyncClient, data: dict[str, str]
):
    response = await identity.post("/api/v1/device_authorization", data=data)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "client_id"]


async def test_codes_differ_on_every_authorization(identity: httpx.AsyncClient):
    bodies = [await authorize(identity) for _ in range(5)]
    assert len({b["device_code"] for b in bodies}) == 5
    assert len({b["user_code"] for b in bodies}) == 5


async def test_verification_uri_starts_with_the_dashboard_url(
    database_url: str, redis_url: str, redis_namespace: str
):
    settings = make_settings(
        database_url, redis_url, redis_namespace, dashboard_url="https://dash.example.com/"
    )
    async with client_for(create_app(settings)) as client:
        body = await authorize(client)
    assert body["verification_uri"] == "https://dash.example.com/devices/verify"
    assert body["verification_uri_complete"].startswith(
        "https://dash.example.com/devices/verify?device_id="
    )


async def test_codes_are_stored_only_as_hashes(
    identity: httpx.AsyncClient, identity_settings: Settings
):
    body = await authorize(identity)
    engine = create_async_engine(identity_settings.database_url)
    try:
        async with engine.connect() as conn:
            row = (await conn.execute(text("SELECT * FROM oauth_devices"))).mappings().one()
    finally:
        await engine.dispose()
    stored = " ".join(str(v) for v in row.values())
    assert body["device_code"] not in stored
    assert body["user_code"] not in stored


async def test_user_agent_is_parsed_into_the_device_fields(
    identity: httpx.AsyncClient, login: Login
):
    token = await login()
    authorization = await authorize(identity)
    response = await identity.get(
        f"/api/v1/devices/{device_id(authorization)}",
        params={"user_code": authorization["user_code"]},
        headers=bearer(token),
    )
    assert response.status_code == 200, response.text
    body, metadata = response.json()["body"], response.json()["metadata"]
    assert body["hostname"] == "laptop"
    assert body["os"] == "Linux-6.1"
    assert body["ip_address"] == "127.0.0.1"
    assert metadata["python_version"] == "3.11.9"
    assert metadata["zenml_version"] == "0.96.3"
    assert (metadata["city"], metadata["region"], metadata["country"]) == ("", "", "")


async def test_known_client_gets_its_device_back_with_new_codes(
    identity: httpx.AsyncClient, login: Login
):
    token = await login()
    client_id = uuid.uuid4()
    first = await authorize(identity, client_id)
    second = await authorize(identity, client_id)
    assert device_id(first) == device_id(second)
    assert first["user_code"] != second["user_code"]
    stale = await verify(identity, token, second, user_code=first["user_code"])
    assert stale.json()["detail"] == ["ValueError", "Invalid request: invalid user code."]


# Verification


async def test_verify_binds_the_device_to_the_caller(identity: httpx.AsyncClient, login: Login):
    token = await login()
    authorization = await authorize(identity)
    response = await verify(identity, token, authorization, trusted=True)
    assert response.status_code == 200, response.text
    body = response.json()
    assert list(body) == ENVELOPE
    assert body["body"]["status"] == "verified"
    assert body["body"]["trusted_device"] is True
    assert body["resources"]["user"]["name"] == ADMIN
    me = (await identity.get("/api/v1/current-user", headers=bearer(token))).json()
    assert body["body"]["user_id"] == me["id"]


async def test_verify_ignores_case_hyphens_and_spaces_in_the_user_code(
    identity: httpx.AsyncClient, login: Login
):
    token = await login()
    authorization = await authorize(identity)
    code = authorization["user_code"].upper()
    typed = f" {code[:8]}-{code[8:16]} {code[16:]}"
    response = await verify(identity, token, authorization, user_code=typed)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("code", ["0" * 32, "not a code", "z" * 32, ""])
async def test_wrong_user_code_is_400_and_counts_as_a_failure(
    identity: httpx.AsyncClient, login: Login, code: str
):
    token = await login()
    authorization = await authorize(identity)
    response = await verify(identity, token, authorization, user_code=code)
    assert response.status_code == 400
    assert response.json()["detail"] == ["ValueError", "Invalid request: invalid user code."]
    shown = await identity.get(
        f"/api/v1/devices/{device_id(authorization)}",
        params={"user_code": authorization["user_code"]},
        headers=bearer(token),
    )
    assert shown.json()["metadata"]["failed_auth_attempts"] == 1


async def test_third_wrong_user_code_locks_the_device(identity: httpx.AsyncClient, login: Login):
    token = await login()
    authorization = await authorize(identity)
    answers = [
        (await verify(identity, token, authorization, user_code="0" * 32)).json()["detail"][1]
        for _ in range(3)
    ]
    assert answers == [
        "Invalid request: invalid user code.",
        "Invalid request: invalid user code.",
        "Invalid request: device locked due to too many failed authentication attempts.",
    ]
    # Even the right code is refused now: the guessing budget is spent.
    right = await verify(identity, token, authorization)
    assert right.status_code == 400
    assert right.json()["detail"][1] == "Invalid request: device not pending verification."


async def test_verifying_a_verified_device_again_is_400(identity: httpx.AsyncClient, login: Login):
    token = await login()
    authorization = await authorize(identity)
    await verify(identity, token, authorization)
    again = await verify(identity, token, authorization)
    assert again.status_code == 400
    assert again.json()["detail"][1] == "Invalid request: device not pending verification."


async def test_verifying_an_expired_authorization_is_400(
    identity: httpx.AsyncClient, login: Login, clock: Clock
):
    token = await login()
    authorization = await authorize(identity)
    clock.advance(seconds=authorization["expires_in"])
    response = await verify(identity, token, authorization)
    assert response.status_code == 400
    assert response.json()["detail"][1] == "Invalid request: device verification expired."


async def test_verifying_a_device_bound_to_another_user_is_400(
    identity: httpx.AsyncClient, login: Login
):
    admin = await login()
    password = await create_user(identity, admin, "mallory")
    mallory = await login("mallory", password)
    authorization, _ = await device_login(identity, admin)
    again = await authorize(identity, uuid.UUID(authorization["client_id"]))
    response = await verify(identity, mallory, again)
    assert response.status_code == 400
    assert response.json()["detail"][1] == (
        "Invalid request: this device is associated with another user."
    )


async def test_verifying_an_unknown_device_is_404(identity: httpx.AsyncClient, login: Login):
    response = await identity.put(
        f"/api/v1/devices/{uuid.uuid4()}/verify",
        json={"user_code": "0" * 32},
        headers=bearer(await login()),
    )
    assert response.status_code == 404
    assert response.json()["detail"][0] == "KeyError"


async def test_verifying_needs_a_login(identity: httpx.AsyncClient):
    authorization = await authorize(identity)
    response = await identity.put(
        f"/api/v1/devices/{device_id(authorization)}/verify",
        json={"user_code": authorization["user_code"]},
    )
    assert response.status_code == 401


async def test_verify_without_user_code_is_422(identity: httpx.AsyncClient, login: Login):
    authorization = await authorize(identity)
    response = await identity.put(
        f"/api/v1/devices/{device_id(authorization)}/verify",
        json={"trusted_device": True},
        headers=bearer(await login()),
    )
    assert response.status_code == 422


# Reading the caller's devices


async def test_get_own_device_is_hydrated_with_its_user(identity: httpx.AsyncClient, login: Login):
    token = await login()
    authorization, _ = await device_login(identity, token)
    response = await identity.get(
        f"/api/v1/devices/{device_id(authorization)}", headers=bearer(token)
    )
    assert response.status_code == 200
    body = response.json()
    assert list(body) == ENVELOPE
    assert body["body"]["status"] == "active"
    assert body["body"]["client_id"] == authorization["client_id"]
    assert body["metadata"]["last_login"] is not None
    user = body["resources"]["user"]
    assert user["name"] == ADMIN
    assert user["metadata"] is None
    assert user["resources"] is None


async def test_pending_device_is_shown_only_with_its_user_code(
    identity: httpx.AsyncClient, login: Login
):
    token = await login()
    authorization = await authorize(identity)
    url = f"/api/v1/devices/{device_id(authorization)}"
    without = await identity.get(url, headers=bearer(token))
    wrong = await identity.get(url, params={"user_code": "0" * 32}, headers=bearer(token))
    right = await identity.get(
        url, params={"user_code": authorization["user_code"]}, headers=bearer(token)
    )
    expected = [
        "KeyError",
        f"'Unable to get device with ID {device_id(authorization)}: No device with this ID found.'",
    ]
    assert (without.status_code, without.json()["detail"]) == (404, expected)
    assert (wrong.status_code, wrong.json()["detail"]) == (404, expected)
    assert right.status_code == 200
    assert right.json()["body"]["status"] == "pending"
    assert right.json()["body"]["user_id"] is None


async def test_another_users_device_is_404(identity: httpx.AsyncClient, login: Login):
    admin = await login()
    password = await create_user(identity, admin, "mallory")
    mallory = await login("mallory", password)
    authorization, _ = await device_login(identity, admin)
    url = f"/api/v1/devices/{device_id(authorization)}"
    for response in (
        await identity.get(url, headers=bearer(mallory)),
        await identity.get(
            url, params={"user_code": authorization["user_code"]}, headers=bearer(mallory)
        ),
        await identity.put(url, json={"locked": True}, headers=bearer(mallory)),
        await identity.delete(url, headers=bearer(mallory)),
    ):
        assert response.status_code == 404
    still = await identity.get(url, headers=bearer(admin))
    assert still.json()["body"]["status"] == "active"


async def test_unknown_device_is_404_with_the_reference_message(
    identity: httpx.AsyncClient, login: Login
):
    missing = uuid.uuid4()
    response = await identity.get(f"/api/v1/devices/{missing}", headers=bearer(await login()))
    assert response.status_code == 404
    assert response.json()["detail"] == [
        "KeyError",
        f"Unable to get authorized device with ID '{missing}': "
        "No authorized device with this ID found",
    ]


async def test_device_id_that_is_not_a_uuid_is_422(identity: httpx.AsyncClient, login: Login):
    response = await identity.get("/api/v1/devices/nope", headers=bearer(await login()))
    assert response.status_code == 422


async def test_list_shows_only_the_callers_devices(identity: httpx.AsyncClient, login: Login):
    admin = await login()
    password = await create_user(identity, admin, "mallory")
    mallory = await login("mallory", password)
    mine, _ = await device_login(identity, admin)
    await device_login(identity, mallory)
    await authorize(identity)  # pending, nobody's
    page = (await identity.get("/api/v1/devices", headers=bearer(admin))).json()
    assert page["total"] == 1
    assert [item["id"] for item in page["items"]] == [device_id(mine)]
    assert page["items"][0]["metadata"] is None  # lists default to hydrate=false
    # Whatever user is sent: the reference's server sets scope_user to the caller.
    users = (await identity.get("/api/v1/users", headers=bearer(admin))).json()["items"]
    for user in users:
        params = {"scope_user": user["id"]}
        scoped = await identity.get("/api/v1/devices", params=params, headers=bearer(admin))
        assert [item["id"] for item in scoped.json()["items"]] == [device_id(mine)]


async def test_list_scope_user_that_is_not_a_uuid_is_422(identity: httpx.AsyncClient, login: Login):
    token = await login()
    for value in ("mallory", "", "isnull:"):
        params = {"scope_user": value}
        response = await identity.get("/api/v1/devices", params=params, headers=bearer(token))
        assert response.status_code == 422, value
        assert response.json()["detail"][0]["loc"] == ["query", "scope_user"]


async def test_list_filters_by_status_client_and_trust(identity: httpx.AsyncClient, login: Login):
    token = await login()
    trusted, _ = await device_login(identity, token, trusted=True)
    plain, _ = await device_login(identity, token)
    await identity.put(
        f"/api/v1/devices/{device_id(plain)}", json={"locked": True}, headers=bearer(token)
    )

    async def ids(**params: str) -> list[str]:
        response = await identity.get("/api/v1/devices", params=params, headers=bearer(token))
        assert response.status_code == 200, response.text
        return [item["id"] for item in response.json()["items"]]

    assert await ids(status="locked") == [device_id(plain)]
    assert await ids(trusted_device="true") == [device_id(trusted)]
    assert await ids(client_id=trusted["client_id"]) == [device_id(trusted)]
    assert await ids(user=ADMIN, sort_by="created") == [device_id(trusted), device_id(plain)]
    assert await ids(failed_auth_attempts="gt:0") == []


async def test_list_with_an_unknown_status_matches_nothing(
    identity: httpx.AsyncClient, login: Login
):
    response = await identity.get(
        "/api/v1/devices", params={"status": "broken"}, headers=bearer(await login())
    )
    assert (response.status_code, response.json()["items"]) == (200, [])


# Locking and deleting


async def test_locking_a_device_revokes_its_token_and_unlocking_restores_it(
    identity: httpx.AsyncClient, login: Login
):
    token = await login()
    authorization, redeemed = await device_login(identity, token)
    device_token = redeemed.json()["access_token"]
    url = f"/api/v1/devices/{device_id(authorization)}"

    locked = await identity.put(
        url, json={"locked": True, "status": "active"}, headers=bearer(token)
    )
    assert locked.status_code == 200
    assert locked.json()["body"]["status"] == "locked"
    refused = await identity.get("/api/v1/current-user", headers=bearer(device_token))
    assert refused.status_code == 401

    unlocked = await identity.put(url, json={"locked": False}, headers=bearer(token))
    assert unlocked.json()["body"]["status"] == "active"
    accepted = await identity.get("/api/v1/current-user", headers=bearer(device_token))
    assert accepted.status_code == 200


async def test_deleting_a_device_revokes_its_token(identity: httpx.AsyncClient, login: Login):
    token = await login()
    authorization, redeemed = await device_login(identity, token)
    url = f"/api/v1/devices/{device_id(authorization)}"
    response = await identity.delete(url, headers=bearer(token))
    assert response.status_code == 200
    assert response.json() is None
    assert (await identity.get(url, headers=bearer(token))).status_code == 404
    device_token = redeemed.json()["access_token"]
    assert (
        await identity.get("/api/v1/current-user", headers=bearer(device_token))
    ).status_code == 401


async def test_authorizing_a_client_again_revokes_its_earlier_token(
    identity: httpx.AsyncClient, login: Login
):
    token = await login()
    authorization, redeemed = await device_login(identity, token)
    old_token = redeemed.json()["access_token"]
    again = await authorize(identity, uuid.UUID(authorization["client_id"]))
    assert (
        await identity.get("/api/v1/current-user", headers=bearer(old_token))
    ).status_code == 401
    await verify(identity, token, again)
    new = await poll(identity, again["client_id"], again["device_code"])
    new_token = new.json()["access_token"]
    assert (
        await identity.get("/api/v1/current-user", headers=bearer(new_token))
    ).status_code == 200


async def test_deleting_a_user_deletes_their_devices(identity: httpx.AsyncClient, login: Login):
    admin = await login()
    password = await create_user(identity, admin, "leaver")
    leaver = await login("leaver", password)
    authorization, _ = await device_login(identity, leaver)
    await identity.delete("/api/v1/users/leaver", headers=bearer(admin))
    again = await authorize(identity, uuid.UUID(authorization["client_id"]))
    # A new device: the old one went with its user.
    assert device_id(again) != device_id(authorization)


async def test_concurrent_wrong_user_codes_are_all_counted(
    identity: httpx.AsyncClient, login: Login
):
    token = await login()
    authorization = await authorize(identity)
    responses = await asyncio.gather(
        *(verify(identity, token, authorization, user_code="0" * 32) for _ in range(5))
    )
    messages = sorted(r.json()["detail"][1] for r in responses)
    assert messages.count("Invalid request: invalid user code.") == 2
    assert (
        messages.count(
            "Invalid request: device locked due to too many failed authentication attempts."
        )
        == 1
    )
    assert messages.count("Invalid request: device not pending verification.") == 2


async def test_authorizing_clears_devices_that_expired_long_ago(
    identity: httpx.AsyncClient, login: Login, clock: Clock
):
    token = await login()
    stale = await authorize(identity)
    # Past its expiry plus the grace of one timeout.
    clock.advance(seconds=2 * stale["expires_in"] + 1)
    await authorize(identity)
    response = await identity.get(
        f"/api/v1/devices/{device_id(stale)}",
        params={"user_code": stale["user_code"]},
        headers=bearer(token),
    )
    assert response.status_code == 404
    assert response.json()["detail"][1].startswith("Unable to get authorized device")


async def test_codes_and_tokens_never_reach_the_logs(
    identity: httpx.AsyncClient, login: Login, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.DEBUG)
    token = await login()
    authorization = await authorize(identity)
    await verify(identity, token, authorization, user_code="0" * 32)
    await identity.get(
        f"/api/v1/devices/{device_id(authorization)}",
        params={"user_code": authorization["user_code"]},
        headers=bearer(token),
    )
    await verify(identity, token, authorization)
    redeemed = await poll(identity, authorization["client_id"], authorization["device_code"])
    # What the server logged; the test's own HTTP client (httpx, httpcore) logs its URLs.
    logged = "\n".join(
        f"{record.getMessage()} {record.__dict__}"
        for record in caplog.records
        if not record.name.startswith(("httpx", "httpcore"))
    )
    assert "device verified" in logged  # the audit trail is there…
    assert "GET /api/v1/devices/" in logged
    for secret in (
        authorization["device_code"],
        authorization["user_code"],
        redeemed.json()["access_token"],
        token,
    ):
        assert secret not in logged  # …without a credential in it


async def test_using_a_device_token_moves_its_last_login(
    identity: httpx.AsyncClient, login: Login, clock: Clock
):
    token = await login()
    authorization, redeemed = await device_login(identity, token)
    clock.advance(minutes=5)

    me = await identity.get("/api/v1/current-user", headers=bearer(redeemed.json()["access_token"]))
    assert me.status_code == 200

    shown = await identity.get(f"/api/v1/devices/{device_id(authorization)}", headers=bearer(token))
    last_login = datetime.fromisoformat(shown.json()["metadata"]["last_login"]).replace(tzinfo=UTC)
    assert abs(last_login - clock.now) < timedelta(seconds=1)
