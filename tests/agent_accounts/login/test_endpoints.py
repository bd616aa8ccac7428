"""``/login`` (password and api-key grants, grant errors) and ``/logout``."""

from __future__ import annotations

import httpx
import pytest

from tests.agent_accounts.conftest import (
    ADMIN,
    ADMIN_PASSWORD,
    Login,
    NewKey,
    NewUser,
    bearer,
    register_worker,
)
from tests.support.metrics import sample
from tests.support.tokens import padded

ME = "/api/v1/accounts/me"
VERIFICATIONS = "platform_token_verifications_total"


async def test_logout_revokes_the_session_it_is_called_with(
    client: httpx.AsyncClient, login: Login
):
    ended, kept = await login(), await login()

    response = await client.post("/api/v1/logout", headers=bearer(ended))
    assert response.status_code == 204
    assert response.content == b""
    revoked, accepted = (
        (VERIFICATIONS, {"outcome": "revoked"}),
        (VERIFICATIONS, {"outcome": "accepted"}),
    )
    before = sample(*revoked), sample(*accepted)
    refused = await client.get(ME, headers=bearer(ended))
    assert refused.status_code == 401
    assert refused.json() == {"detail": "Invalid session token."}
    assert (await client.get(ME, headers=bearer(kept))).status_code == 200
    assert (sample(*revoked), sample(*accepted)) == (before[0] + 1, before[1] + 1)


async def test_a_token_whose_account_was_deactivated_counts_as_revoked(
    client: httpx.AsyncClient, admin: dict[str, str], new_user: NewUser
):
    user, headers = await new_user()
    revoked, accepted = (
        (VERIFICATIONS, {"outcome": "revoked"}),
        (VERIFICATIONS, {"outcome": "accepted"}),
    )
    assert (await client.get(ME, headers=headers)).status_code == 200
    response = await client.post(f"/api/v1/users/{user['id']}/deactivate", headers=admin)
    assert response.status_code == 200, response.text
    before = sample(*revoked), sample(*accepted)
    assert (await client.get(ME, headers=headers)).status_code == 401
    assert (sample(*revoked), sample(*accepted)) == (before[0] + 1, before[1])


async def test_logout_without_a_session_is_204_and_ends_nothing(
    client: httpx.AsyncClient, new_key: NewKey
):
    key = (await new_key())["key"]

    assert (await client.post("/api/v1/logout")).status_code == 204
    # An API key is not a session: logging out with it leaves it working.
    assert (await client.post("/api/v1/logout", headers=bearer(key))).status_code == 204
    assert (await client.get(ME, headers=bearer(key))).status_code == 200


async def test_wrong_password_and_unknown_user_are_the_same_401(client: httpx.AsyncClient):
    def form(username: str, password: str) -> dict[str, str]:
        return {"grant_type": "password", "username": username, "password": password}

    wrong = await client.post("/api/v1/login", data=form(ADMIN, "nope"))
    unknown = await client.post("/api/v1/login", data=form("ghost", "x"))

    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json() == unknown.json() == {"detail": "Invalid username or password."}


async def test_api_key_grant_exchanges_the_bearer_key_for_a_session(
    client: httpx.AsyncClient, new_key: NewKey
):
    key = (await new_key())["key"]

    response = await client.post(
        "/api/v1/login", data={"grant_type": "api-key"}, headers=bearer(key)
    )
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    session = response.json()["access_token"]
    assert (await client.get(ME, headers=bearer(session))).json()["name"] == ADMIN
    without_key = await client.post("/api/v1/login", data={"grant_type": "api-key"})
    assert without_key.status_code == 401


async def test_login_without_grant_type_infers_the_password_grant(client: httpx.AsyncClient):
    # What the kitaru UI's login form posts.
    response = await client.post(
        "/api/v1/login", data={"username": ADMIN, "password": ADMIN_PASSWORD}
    )

    assert response.status_code == 200, response.text
    session = response.json()["access_token"]
    assert (await client.get(ME, headers=bearer(session))).json()["name"] == ADMIN
    wrong = await client.post("/api/v1/login", data={"username": ADMIN, "password": "nope"})
    assert wrong.status_code == 401
    assert wrong.json() == {"detail": "Invalid username or password."}


async def test_login_without_grant_type_never_infers_the_api_key_grant(
    client: httpx.AsyncClient, new_key: NewKey
):
    key = (await new_key())["key"]

    response = await client.post("/api/v1/login", data={}, headers=bearer(key))

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


@pytest.mark.parametrize("settings_overrides", [{"server_auth_scheme": "none"}])
async def test_login_without_grant_type_or_user_under_the_none_scheme_is_invalid_request(
    client: httpx.AsyncClient,
):
    bare = await client.post("/api/v1/login", data={})
    with_user = await client.post("/api/v1/login", data={"username": ADMIN, "password": "x"})

    assert bare.status_code == with_user.status_code == 400
    assert bare.json()["error"] == "invalid_request"
    assert with_user.json()["error"] == "unsupported_grant_type"


async def test_grant_errors_are_400_with_an_oauth_error_code(client: httpx.AsyncClient):
    missing = await client.post("/api/v1/login", data={"password": ADMIN_PASSWORD})
    unknown = await client.post("/api/v1/login", data={"grant_type": "magic"})
    incomplete = await client.post("/api/v1/login", data={"grant_type": "password"})

    assert missing.status_code == unknown.status_code == incomplete.status_code == 400
    assert missing.json()["error"] == "invalid_request"
    assert unknown.json()["error"] == "unsupported_grant_type"
    assert incomplete.json()["error"] == "invalid_request"


async def test_password_grant_answers_a_bearer_token(client: httpx.AsyncClient):
    response = await client.post(
        "/api/v1/login",
        data={"grant_type": "password", "username": ADMIN, "password": ADMIN_PASSWORD},
    )

    assert response.status_code == 200
    body = response.json()
    assert body["token_type"] == "bearer"
    assert 3590 <= body["expires_in"] <= 3599
    assert body["csrf_token"] is None


async def test_padded_session_and_worker_tokens_are_401(
    client: httpx.AsyncClient, login: Login, new_key: NewKey
):
    session = await login()
    worker = await register_worker(client, (await new_key())["key"])
    heartbeat = f"/api/v1/workers/{worker['worker']['id']}/heartbeat"

    async def answers(session: str, worker_token: str) -> list[int]:
        me = await client.get(ME, headers=bearer(session))
        beat = await client.post(heartbeat, json={"task_ids": []}, headers=bearer(worker_token))
        return [me.status_code, beat.status_code]

    assert await answers(session, worker["token"]) == [200, 200]
    assert await answers(padded(session), padded(worker["token"])) == [401, 401]
