"""The token endpoint, logout and current-user, against the reference's shapes."""

from __future__ import annotations

import base64
import json
import logging
from datetime import UTC, datetime, timedelta

import httpx
import jwt
import pytest

from identity.settings import Settings
from shared.auth import TokenKind, TokenSigner, generate_signing_key
from tests.identity.conftest import (
    ADMIN,
    ADMIN_PASSWORD,
    TRACKING_SECRET,
    Clock,
    Login,
    bearer,
)
from tests.support.asgi import LifespanApp
from tests.support.tokens import padded

TOKEN_KEYS = {
    "access_token",
    "token_type",
    "expires_in",
    "refresh_token",
    "csrf_token",
    "scope",
    "device_id",
    "device_metadata",
}


async def test_password_login_returns_token_response_with_every_key(identity: httpx.AsyncClient):
    response = await identity.post(
        "/api/v1/login", data={"username": ADMIN, "password": ADMIN_PASSWORD}
    )
    assert response.status_code == 200
    body = response.json()
    assert set(body) == TOKEN_KEYS
    assert body["token_type"] == "bearer"
    assert body["expires_in"] == 3600
    assert body["refresh_token"] is None


async def test_password_login_sets_httponly_lax_session_cookie(identity: httpx.AsyncClient):
    response = await identity.post(
        "/api/v1/login", data={"username": ADMIN, "password": ADMIN_PASSWORD}
    )
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"zenml-server-{identity_settings_server_id(response)}=")
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie
    assert "Path=/" in cookie


def identity_settings_server_id(response: httpx.Response) -> str:
    # The `server` header carries the server id, as the reference does.
    return response.headers["server"]


async def test_token_responses_are_never_cached(identity: httpx.AsyncClient):
    response = await identity.post(
        "/api/v1/login", data={"username": ADMIN, "password": ADMIN_PASSWORD}
    )
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["pragma"] == "no-cache"


async def test_wrong_password_and_unknown_user_get_the_same_401(identity: httpx.AsyncClient):
    wrong = await identity.post("/api/v1/login", data={"username": ADMIN, "password": "nope"})
    unknown = await identity.post("/api/v1/login", data={"username": "ghost", "password": "nope"})
    expected = ["CredentialsNotValid", "Authentication error: invalid username or password"]
    for response in (wrong, unknown):
        assert response.status_code == 401
        assert response.json() == {"detail": expected}
        assert response.headers["www-authenticate"].startswith("Bearer")


async def test_login_without_username_is_400_with_string_detail(identity: httpx.AsyncClient):
    response = await identity.post("/api/v1/login", data={"grant_type": "password"})
    assert response.status_code == 400
    assert response.json() == {"detail": "Invalid request: username is required."}


async def test_json_body_reads_as_an_empty_form(identity: httpx.AsyncClient):
    response = await identity.post(
        "/api/v1/login", json={"username": ADMIN, "password": ADMIN_PASSWORD}
    )
    assert response.status_code == 400
    assert response.json() == {"detail": "Invalid request: username is required."}


async def test_unknown_grant_type_is_400(identity: httpx.AsyncClient):
    response = await identity.post("/api/v1/login", data={"grant_type": "magic"})
    assert response.status_code == 400
    assert response.json() == {"detail": "Unsupported grant type: magic"}


async def test_external_grant_is_unsupported(identity: httpx.AsyncClient):
    response = await identity.post("/api/v1/login", data={"grant_type": "zenml-external"})
    assert response.json() == {"detail": "Unsupported grant type: zenml-external."}


async def test_repeated_parameter_is_invalid_request(identity: httpx.AsyncClient):
    response = await identity.post(
        "/api/v1/login",
        content=b"grant_type=password&grant_type=password&username=default&password=x",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


async def test_api_key_grant_without_key_is_400(identity: httpx.AsyncClient):
    response = await identity.post("/api/v1/login", data={"grant_type": "zenml-api-key"})
    assert response.status_code == 400
    assert response.json() == {"detail": "API key is required."}


async def test_api_key_grant_with_unknown_key_is_401(identity: httpx.AsyncClient):
    response = await identity.post("/api/v1/login", data={"password": "ZENKEY_bogus"})
    assert response.status_code == 401
    assert response.json()["detail"][0] == "CredentialsNotValid"


async def test_client_credentials_grant_issues_a_service_token(identity: httpx.AsyncClient):
    response = await identity.post(
        "/api/v1/login",
        data={
            "grant_type": "client_credentials",
            "client_id": "tracking",
            "client_secret": TRACKING_SECRET,
        },
    )
    assert response.status_code == 200
    assert "set-cookie" not in response.headers
    claims = jwt.decode(response.json()["access_token"], options={"verify_signature": False})
    assert claims["kind"] == TokenKind.SERVICE
    assert claims["sub"] == "service:tracking"


@pytest.mark.parametrize(
    ("client_id", "secret"), [("tracking", "wrong"), ("unknown", TRACKING_SECRET), ("", "")]
)
async def test_client_credentials_with_bad_secret_is_invalid_client(
    identity: httpx.AsyncClient, client_id: str, secret: str
):
    response = await identity.post(
        "/api/v1/login",
        data={"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret},
    )
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"


async def test_service_token_cannot_read_current_user(identity: httpx.AsyncClient):
    response = await identity.post(
        "/api/v1/login",
        data={
            "grant_type": "client_credentials",
            "client_id": "tracking",
            "client_secret": TRACKING_SECRET,
        },
    )
    me = await identity.get("/api/v1/current-user", headers=bearer(response.json()["access_token"]))
    assert me.status_code == 401
    assert me.json()["detail"][0] == "AuthorizationException"


async def test_current_user_accepts_bearer_token(identity: httpx.AsyncClient, login: Login):
    response = await identity.get("/api/v1/current-user", headers=bearer(await login()))
    assert response.status_code == 200
    body = response.json()
    assert list(body) == ["body", "metadata", "resources", "id", "permission_denied", "name"]
    assert body["name"] == ADMIN
    assert body["body"]["is_admin"] is True
    assert body["metadata"] is not None


async def test_current_user_accepts_session_cookie(identity: httpx.AsyncClient):
    await identity.post("/api/v1/login", data={"username": ADMIN, "password": ADMIN_PASSWORD})
    # httpx keeps the cookie the login set.
    response = await identity.get("/api/v1/current-user")
    assert response.status_code == 200


async def test_current_user_without_credentials_is_401_not_authenticated(
    identity: httpx.AsyncClient,
):
    response = await identity.get("/api/v1/current-user")
    assert response.status_code == 401
    assert response.json() == {"detail": "Not authenticated"}
    assert response.headers["www-authenticate"] == "Bearer"


def _flip_signature(token: str) -> str:
    head, payload, signature = token.split(".")
    raw = bytearray(base64.urlsafe_b64decode(signature + "=="))
    raw[0] ^= 0x01
    flipped = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    return f"{head}.{payload}.{flipped}"


async def test_forged_token_is_401_credentials_not_valid(identity: httpx.AsyncClient, login: Login):
    response = await identity.get(
        "/api/v1/current-user", headers=bearer(_flip_signature(await login()))
    )
    assert response.status_code == 401
    assert response.json()["detail"][0] == "CredentialsNotValid"
    assert "invalid_token" in response.headers["www-authenticate"]


async def test_padded_token_is_401_as_bearer_and_as_cookie(identity: httpx.AsyncClient):
    login = await identity.post(
        "/api/v1/login", data={"username": ADMIN, "password": ADMIN_PASSWORD}
    )
    token = padded(login.json()["access_token"])
    (cookie_name,) = identity.cookies.keys()
    identity.cookies.set(cookie_name, token)

    by_cookie = await identity.get("/api/v1/current-user")
    identity.cookies.clear()
    by_bearer = await identity.get("/api/v1/current-user", headers=bearer(token))

    for response in (by_cookie, by_bearer):
        assert response.status_code == 401
        assert response.json()["detail"] == [
            "CredentialsNotValid",
            "Authentication error: token signature is not valid base64url",
        ]


async def test_token_signed_by_a_stranger_key_with_a_known_kid_is_401(
    identity: httpx.AsyncClient, login: Login
):
    kid = jwt.get_unverified_header(await login())["kid"]
    stranger = TokenSigner(generate_signing_key(), kid=kid, issuer="platform-identity")
    token, _ = stranger.issue(
        subject="x", kind=TokenKind.ACCESS, audience="platform-api", lifetime=timedelta(hours=1)
    )
    response = await identity.get("/api/v1/current-user", headers=bearer(token))
    assert response.status_code == 401


async def test_expired_token_is_401(identity: httpx.AsyncClient, identity_app: LifespanApp):
    signer = await identity_app.state["keyring"].signer()
    token, _ = signer.issue(
        subject="00000000-0000-0000-0000-000000000000",
        kind=TokenKind.ACCESS,
        audience="platform-api",
        lifetime=timedelta(minutes=5),
        now=datetime.now(UTC) - timedelta(minutes=10),
    )
    response = await identity.get("/api/v1/current-user", headers=bearer(token))
    assert response.status_code == 401
    assert response.json()["detail"][0] == "CredentialsNotValid"


async def test_a_session_token_works_for_its_lifetime_and_the_leeway_only(
    identity: httpx.AsyncClient, login: Login, clock: Clock, identity_settings: Settings
):
    token = await login()
    lasts = identity_settings.access_token_lifetime + identity_settings.jwt_leeway
    clock.advance(seconds=lasts.total_seconds() - 1)
    assert (await identity.get("/api/v1/current-user", headers=bearer(token))).status_code == 200
    clock.advance(seconds=1)
    response = await identity.get("/api/v1/current-user", headers=bearer(token))
    assert response.status_code == 401
    assert response.json()["detail"] == [
        "CredentialsNotValid",
        "Authentication error: token has expired",
    ]


async def test_logout_revokes_the_token_and_clears_the_cookie(
    identity: httpx.AsyncClient, login: Login
):
    token = await login()
    response = await identity.get("/api/v1/logout", headers=bearer(token))
    assert response.status_code == 200
    assert response.json() is None
    assert "Max-Age=0" in response.headers["set-cookie"]
    after = await identity.get("/api/v1/current-user", headers=bearer(token))
    assert after.status_code == 401


async def test_logout_leaves_other_sessions_alive(identity: httpx.AsyncClient, login: Login):
    first, second = await login(), await login()
    await identity.get("/api/v1/logout", headers=bearer(first))
    response = await identity.get("/api/v1/current-user", headers=bearer(second))
    assert response.status_code == 200


async def test_logout_without_a_token_is_200(identity: httpx.AsyncClient):
    response = await identity.get("/api/v1/logout")
    assert response.status_code == 200


async def test_logout_by_post_is_405(identity: httpx.AsyncClient):
    response = await identity.post("/api/v1/logout")
    assert response.status_code == 405


async def test_login_works_with_a_stale_cookie_present(identity: httpx.AsyncClient):
    identity.cookies.set(
        f"zenml-server-{(await identity.get('/api/v1/info')).json()['id']}", "x.y.z"
    )
    response = await identity.post(
        "/api/v1/login", data={"username": ADMIN, "password": ADMIN_PASSWORD}
    )
    assert response.status_code == 200


async def test_issued_token_claims_are_bound_to_issuer_audience_and_kind(login: Login):
    token = await login()
    header = jwt.get_unverified_header(token)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert header["alg"] == "EdDSA"
    assert header["kid"]
    assert claims["iss"] == "platform-identity"
    assert claims["aud"] == "platform-api"
    assert claims["kind"] == TokenKind.ACCESS
    assert claims["exp"] > claims["iat"]
    assert json.dumps(claims).find(ADMIN_PASSWORD) == -1


async def test_failed_logins_log_no_submitted_value(
    identity: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
):
    # A password typed into the name field, a key, a client secret in the client id.
    typed = "correct horse battery staple 9"
    key = (
        "ZENKEY_"
        + base64.b64encode(
            json.dumps({"id": "8a3a4a36-8f73-4b8e-9a0c-0d3b5d3c9d11", "key": typed}).encode()
        ).decode()
    )
    caplog.set_level(logging.DEBUG)
    attempts = [
        {"username": typed, "password": "x"},
        {"username": ADMIN, "password": typed},
        {"grant_type": "zenml-api-key", "password": key},
        {"grant_type": "client_credentials", "client_id": typed, "client_secret": typed},
    ]
    for form in attempts:
        assert (await identity.post("/api/v1/login", data=form)).status_code in (400, 401)

    logged = [record.getMessage() + repr(record.__dict__) for record in caplog.records]
    assert not any(typed in line or key in line for line in logged)
    failed = [r.__dict__ for r in caplog.records if r.getMessage() == "login failed"]
    assert [(r["user_id"] is not None, r["reason"]) for r in failed] == [
        (False, "unknown user"),
        (True, "wrong password or inactive"),
    ]
