"""The device flow: device authorization, approval, the device-code grant on /login with
its error codes, sessions that re-check their device, and device management."""

from __future__ import annotations

import re

import httpx
import jwt
import pytest

from tests.agent_accounts.conftest import Clock, NewUser, bearer, stored_rows
from tests.agent_accounts.device.conftest import Approve, Authorize, Poll, logged_in_device

ME = "/api/v1/accounts/me"
USER_CODE = re.compile(r"^[34679ACDEFGHJKLMNPQRTUVWXY]{4}-[34679ACDEFGHJKLMNPQRTUVWXY]{4}$")


def grant_error(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == {"error", "detail"}
    assert body["detail"]
    error: str = body["error"]
    return error


async def test_device_authorization_returns_both_codes_once_with_the_verification_uri(
    client: httpx.AsyncClient, authorize: Authorize
):
    response = await client.post("/api/v1/device_authorization", data={"hostname": "laptop"})

    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert re.fullmatch(r"[0-9a-f]{64}", body["device_code"])
    assert USER_CODE.match(body["user_code"])
    assert body["verification_uri"] == "http://testserver/devices/verify"
    assert body["verification_uri_complete"] == (
        f"http://testserver/devices/verify?device_id={body['device_id']}"
        f"&user_code={body['user_code']}"
    )
    assert body["expires_in"] == 300
    assert body["interval"] == 5
    other = await authorize()
    assert other["device_code"] != body["device_code"]
    assert other["user_code"] != body["user_code"]


@pytest.mark.parametrize(
    "settings_overrides",
    [{"dashboard_url": "https://agents.example.com/", "server_device_auth_timeout_seconds": 120,
      "server_device_auth_polling_interval_seconds": 2}],
)  # fmt: skip
async def test_lifetimes_and_the_verification_page_come_from_settings(authorize: Authorize):
    body = await authorize()

    assert body["verification_uri"] == "https://agents.example.com/devices/verify"
    assert body["expires_in"] == 120
    assert body["interval"] == 2


async def test_codes_are_stored_as_hashes_only(
    client: httpx.AsyncClient, authorize: Authorize, agent_settings
):
    device = await authorize()
    rows = await stored_rows(agent_settings, "SELECT * FROM devices")

    assert len(rows) == 1
    assert device["device_code"] not in repr(rows)
    assert device["user_code"] not in repr(rows)


async def test_polling_before_approval_is_authorization_pending(authorize: Authorize, poll: Poll):
    device = await authorize()

    assert grant_error(await poll(device)) == "authorization_pending"


async def test_polling_faster_than_the_interval_is_slow_down(
    authorize: Authorize, poll: Poll, clock: Clock
):
    device = await authorize()
    assert grant_error(await poll(device)) == "authorization_pending"
    clock.advance(seconds=4)
    assert grant_error(await poll(device)) == "slow_down"
    clock.advance(seconds=5)
    assert grant_error(await poll(device)) == "authorization_pending"


async def test_approved_device_gets_a_session_naming_the_device(
    client: httpx.AsyncClient, authorize: Authorize, approve: Approve, poll: Poll, admin
):
    device = await authorize()
    approved = await approve(device)
    assert approved.status_code == 200
    assert approved.json()["status"] == "verified"

    response = await poll(device)
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    token = response.json()
    assert token["token_type"] == "bearer"
    assert 3598 <= token["expires_in"] <= 3599
    claims = jwt.decode(token["access_token"], options={"verify_signature": False})
    assert claims["device_id"] == device["device_id"]
    me = await client.get(ME, headers=bearer(token["access_token"]))
    assert me.status_code == 200
    assert me.json()["name"] == "default"
    stored = (await client.get(f"/api/v1/devices/{device['device_id']}", headers=admin)).json()
    assert stored["status"] == "active"
    assert stored["last_login"] is not None
    assert stored["hostname"] == "laptop"
    assert stored["os"] == "Linux"
    assert stored["python_version"] == "3.12.1"
    assert stored["client_version"] == "0.27.2"
    assert stored["ip_address"]


async def test_authorization_expires_after_the_timeout(
    authorize: Authorize, approve: Approve, poll: Poll, clock: Clock
):
    device = await authorize()
    clock.advance(seconds=301)

    assert grant_error(await poll(device)) == "expired_token"
    refused = await approve(device)
    assert refused.status_code == 422
    assert refused.json() == {"detail": "Device authorization has expired"}


async def test_approved_but_unclaimed_authorization_expires_too(
    authorize: Authorize, approve: Approve, poll: Poll, clock: Clock
):
    device = await authorize()
    assert (await approve(device)).status_code == 200
    clock.advance(seconds=301)

    assert grant_error(await poll(device)) == "expired_token"


async def test_wrong_device_codes_never_lock_an_approved_device(
    authorize: Authorize, approve: Approve, poll: Poll
):
    device = await authorize()
    assert (await approve(device)).status_code == 200
    for _ in range(5):
        assert grant_error(await poll(device, device_code="0" * 64)) == "invalid_grant"

    assert (await poll(device)).status_code == 200


async def test_wrong_user_codes_count_and_the_third_locks_the_device(
    authorize: Authorize, approve: Approve, poll: Poll
):
    device = await authorize()
    for _ in range(3):
        refused = await approve(device, user_code="AAAA-AAAA")
        assert refused.status_code == 422
        assert refused.json() == {"detail": "Invalid user code"}

    locked = await approve(device)
    assert locked.status_code == 422
    assert locked.json() == {"detail": "Device is locked"}
    assert grant_error(await poll(device)) == "access_denied"


async def test_user_code_is_accepted_as_a_person_types_it(
    authorize: Authorize, approve: Approve, poll: Poll
):
    device = await authorize()
    typed = device["user_code"].replace("-", " ").lower()

    assert (await approve(device, user_code=typed)).status_code == 200
    assert (await poll(device)).status_code == 200


async def test_unknown_or_malformed_device_is_invalid_grant(poll: Poll):
    unknown = {"device_id": "01900000-0000-7000-8000-000000000000", "device_code": "a" * 64}
    malformed = {"device_id": "not-a-uuid", "device_code": "a" * 64}

    assert grant_error(await poll(unknown)) == "invalid_grant"
    assert grant_error(await poll(malformed)) == "invalid_grant"


async def test_device_grant_without_its_fields_is_invalid_request(client: httpx.AsyncClient):
    response = await client.post(
        "/api/v1/login", data={"grant_type": "urn:ietf:params:oauth:grant-type:device_code"}
    )

    assert grant_error(response) == "invalid_request"


async def test_device_code_refreshes_the_session_of_an_active_device(
    client: httpx.AsyncClient, authorize: Authorize, approve: Approve, poll: Poll
):
    device, first = await logged_in_device(authorize, approve, poll)

    again = await poll(device)
    assert again.status_code == 200
    assert again.json()["access_token"] != first["access_token"]
    assert (await client.get(ME, headers=bearer(again.json()["access_token"]))).status_code == 200
    # An active device is past its authorization window and is not polled: no slow_down.
    assert (await poll(device)).status_code == 200


async def test_locking_a_device_ends_its_sessions_and_its_refresh(
    client: httpx.AsyncClient, authorize: Authorize, approve: Approve, poll: Poll, admin
):
    device, token = await logged_in_device(authorize, approve, poll)
    path = f"/api/v1/devices/{device['device_id']}"

    locked = await client.patch(path, json={"locked": True}, headers=admin)
    assert locked.status_code == 200
    assert locked.json()["locked"] is True
    assert (await client.get(ME, headers=bearer(token["access_token"]))).status_code == 401
    assert grant_error(await poll(device)) == "access_denied"

    assert (await client.patch(path, json={"locked": False}, headers=admin)).status_code == 200
    assert (await client.get(ME, headers=bearer(token["access_token"]))).status_code == 200
    assert (await poll(device)).status_code == 200


async def test_wrong_device_codes_never_lock_an_active_device_or_end_its_sessions(
    client: httpx.AsyncClient, authorize: Authorize, approve: Approve, poll: Poll, admin
):
    device, token = await logged_in_device(authorize, approve, poll)
    for _ in range(5):
        assert grant_error(await poll(device, device_code="0" * 64)) == "invalid_grant"

    stored = await client.get(f"/api/v1/devices/{device['device_id']}", headers=admin)
    assert stored.json()["locked"] is False
    assert (await client.get(ME, headers=bearer(token["access_token"]))).status_code == 200
    assert (await poll(device)).status_code == 200


async def test_a_wrong_device_code_tells_nothing_of_a_locked_or_expired_device(
    client: httpx.AsyncClient,
    authorize: Authorize,
    approve: Approve,
    poll: Poll,
    admin,
    clock: Clock,
):
    locked, _ = await logged_in_device(authorize, approve, poll)
    await client.patch(
        f"/api/v1/devices/{locked['device_id']}", json={"locked": True}, headers=admin
    )
    expired = await authorize()
    clock.advance(seconds=301)

    for device in (locked, expired):
        assert grant_error(await poll(device, device_code="0" * 64)) == "invalid_grant"


async def test_deleting_a_device_ends_its_sessions_and_its_refresh(
    client: httpx.AsyncClient, authorize: Authorize, approve: Approve, poll: Poll, admin
):
    device, token = await logged_in_device(authorize, approve, poll)

    deleted = await client.delete(f"/api/v1/devices/{device['device_id']}", headers=admin)
    assert deleted.status_code == 204
    assert (await client.get(ME, headers=bearer(token["access_token"]))).status_code == 401
    assert grant_error(await poll(device)) == "invalid_grant"


@pytest.mark.parametrize(
    "settings_overrides",
    [{"server_device_expiration_minutes": 30, "server_trusted_device_expiration_minutes": 600}],
)
async def test_device_expiry_caps_its_tokens_and_ends_its_sessions(
    client: httpx.AsyncClient, authorize: Authorize, approve: Approve, poll: Poll, clock: Clock
):
    device, token = await logged_in_device(authorize, approve, poll)
    trusted, trusted_token = await logged_in_device(authorize, approve, poll, trusted=True)
    assert 30 * 60 - 2 <= token["expires_in"] <= 30 * 60 - 1
    assert 3598 <= trusted_token["expires_in"] <= 3599

    clock.advance(minutes=29)
    assert (await client.get(ME, headers=bearer(token["access_token"]))).status_code == 200
    clock.advance(minutes=2)
    assert (await client.get(ME, headers=bearer(token["access_token"]))).status_code == 401
    assert grant_error(await poll(device)) == "expired_token"
    assert (await poll(trusted)).status_code == 200


async def test_deactivating_the_approving_account_ends_the_device_login(
    client: httpx.AsyncClient,
    authorize: Authorize,
    approve: Approve,
    poll: Poll,
    new_user: NewUser,
    admin,
):
    user, headers = await new_user()
    device, token = await logged_in_device(authorize, approve, poll, headers=headers)
    assert (await client.post(f"/api/v1/users/{user['id']}/deactivate", headers=admin)).is_success

    assert (await client.get(ME, headers=bearer(token["access_token"]))).status_code == 401
    # The device is gone with the account's other logins, not only locked out while the
    # account is inactive: its code refreshes nothing after an activation either.
    assert grant_error(await poll(device)) == "invalid_grant"


async def test_devices_are_listed_read_and_managed_by_their_account_only(
    client: httpx.AsyncClient,
    authorize: Authorize,
    approve: Approve,
    poll: Poll,
    new_user: NewUser,
    admin,
):
    mine, _ = await logged_in_device(authorize, approve, poll)
    _, other = await new_user()
    path = f"/api/v1/devices/{mine['device_id']}"

    listed = (await client.get("/api/v1/devices", headers=admin)).json()
    assert [d["id"] for d in listed["items"]] == [mine["device_id"]]
    assert listed["next_cursor"] is None
    assert (await client.get("/api/v1/devices", headers=other)).json()["items"] == []
    assert (await client.get(path, headers=other)).status_code == 404
    assert (await client.patch(path, json={"locked": True}, headers=other)).status_code == 404
    assert (await client.delete(path, headers=other)).status_code == 404
    assert (await approve(mine, headers=other)).status_code == 404
    trusted = await client.patch(path, json={"trusted": True}, headers=admin)
    assert trusted.json()["trusted"] is True


async def test_device_list_filters_by_status(
    client: httpx.AsyncClient, authorize: Authorize, approve: Approve, poll: Poll, admin
):
    await logged_in_device(authorize, approve, poll)
    verified = await authorize()
    await approve(verified)
    query = '{"field":"status","op":"eq","value":"verified"}'

    listed = await client.get("/api/v1/devices", params={"filter": query}, headers=admin)
    assert [d["id"] for d in listed.json()["items"]] == [verified["device_id"]]
    bad = await client.get("/api/v1/devices", params={"filter": '{"field":"os"}'}, headers=admin)
    assert bad.status_code == 422


async def test_unapproved_device_is_visible_only_with_its_user_code(
    client: httpx.AsyncClient, authorize: Authorize, admin
):
    device = await authorize()
    path = f"/api/v1/devices/{device['device_id']}"

    assert (await client.get(path, headers=admin)).status_code == 404
    wrong = await client.get(path, params={"user_code": "AAAA-AAAA"}, headers=admin)
    assert wrong.status_code == 404
    seen = await client.get(path, params={"user_code": device["user_code"]}, headers=admin)
    assert seen.status_code == 200
    assert seen.json()["status"] == "pending"


async def test_a_device_is_approved_once(authorize: Authorize, approve: Approve, new_user: NewUser):
    device = await authorize()
    assert (await approve(device)).status_code == 200

    again = await approve(device)
    assert again.status_code == 422
    assert again.json() == {"detail": "Device is not waiting for approval"}
    _, other = await new_user()
    assert (await approve(device, headers=other)).status_code == 404


async def test_approving_needs_an_account(client: httpx.AsyncClient, authorize: Authorize):
    device = await authorize()
    response = await client.post(
        f"/api/v1/devices/{device['device_id']}/verify", json={"user_code": device["user_code"]}
    )

    assert response.status_code == 401


async def test_bad_device_requests_are_422(client: httpx.AsyncClient, authorize: Authorize, admin):
    device = await authorize()
    path = f"/api/v1/devices/{device['device_id']}"

    long_form = await client.post("/api/v1/device_authorization", data={"hostname": "h" * 300})
    assert long_form.status_code == 422
    extra = await client.post(f"{path}/verify", json={"user_code": "x", "x": 1}, headers=admin)
    assert extra.status_code == 422
    assert (await client.get("/api/v1/devices/not-a-uuid", headers=admin)).status_code == 422
    assert (await client.patch(path, json={"locked": "maybe"}, headers=admin)).status_code == 422


async def test_expired_authorizations_are_cleaned_up(
    authorize: Authorize, clock: Clock, agent_settings
):
    await authorize()
    clock.advance(seconds=301)
    await authorize()

    assert len(await stored_rows(agent_settings, "SELECT id FROM devices")) == 1


@pytest.mark.parametrize("settings_overrides", [{"server_auth_scheme": "none"}])
async def test_none_scheme_refuses_the_device_flow(client: httpx.AsyncClient, poll: Poll):
    response = await client.post("/api/v1/device_authorization", data={})

    assert grant_error(response) == "unsupported_grant_type"
    unknown = {"device_id": "01900000-0000-7000-8000-000000000000", "device_code": "a" * 64}
    assert grant_error(await poll(unknown)) == "unsupported_grant_type"
