"""``/info`` and the first admin."""

from __future__ import annotations

import httpx
import pytest
from pydantic import SecretStr, ValidationError

from identity.app import create_app
from identity.settings import Settings
from tests.identity.conftest import Clock, Login, bearer, make_settings
from tests.identity.server_settings.support import assert_reference_shape
from tests.support.asgi import client_for, running_together


async def test_info_is_the_server_model_without_auth(identity: httpx.AsyncClient):
    response = await identity.get("/api/v1/info")
    assert response.status_code == 200
    body = response.json()
    assert body["version"] == "0.96.3"
    assert body["auth_scheme"] == "OAUTH2_PASSWORD_BEARER"
    assert body["active"] is True
    assert body["pro_api_url"] is None
    assert response.headers["server"] == body["id"]
    assert_reference_shape("ServerModel", body)


async def test_first_admin_gets_a_printed_random_password_once(
    database_url: str, redis_url: str, redis_namespace: str, capsys: pytest.CaptureFixture[str]
):
    settings = make_settings(database_url, redis_url, redis_namespace, default_admin_password=None)
    async with client_for(create_app(settings)):
        pass
    printed = capsys.readouterr().out
    assert "Created the first admin 'default'" in printed
    password = printed.split("generated password: ")[1].split()[0]
    async with client_for(create_app(settings)) as client:
        response = await client.post(
            "/api/v1/login", data={"username": "default", "password": password}
        )
        assert response.status_code == 200
    assert "generated password" not in capsys.readouterr().out


async def test_configured_admin_password_is_used_and_not_printed(
    database_url: str, redis_url: str, redis_namespace: str, capsys: pytest.CaptureFixture[str]
):
    settings = make_settings(
        database_url, redis_url, redis_namespace, default_admin_password=SecretStr("p" * 12)
    )
    async with client_for(create_app(settings)) as client:
        response = await client.post(
            "/api/v1/login", data={"username": "default", "password": "p" * 12}
        )
    assert response.status_code == 200
    assert "p" * 12 not in capsys.readouterr().out


async def test_replicas_starting_together_create_the_first_admin_once(
    database_url: str, redis_url: str, redis_namespace: str, capsys: pytest.CaptureFixture[str]
):
    settings = make_settings(database_url, redis_url, redis_namespace, default_admin_password=None)
    async with running_together(*(create_app(settings) for _ in range(3))):
        pass
    assert capsys.readouterr().out.count("generated password: ") == 1


async def test_info_names_the_server_and_dashboard_urls(identity_settings: Settings, clock: Clock):
    settings = identity_settings.model_copy(
        update={
            "server_url": "https://ml.example.com",
            "dashboard_url": "https://dashboard.example.com",
        }
    )
    async with client_for(create_app(settings, clock=clock)) as client:
        body = (await client.get("/api/v1/info")).json()
    assert_reference_shape("ServerModel", body)
    assert (body["server_url"], body["dashboard_url"]) == (
        "https://ml.example.com",
        "https://dashboard.example.com",
    )


def test_the_dashboard_is_at_the_server_url_unless_set_apart(identity_settings: Settings):
    values = identity_settings.model_dump() | {"server_url": "http://127.0.0.1:8080/"}
    settings = Settings(**{k: v for k, v in values.items() if k != "dashboard_url"})
    assert (settings.server_url, settings.dashboard_url) == (
        "http://127.0.0.1:8080",
        "http://127.0.0.1:8080",
    )


def test_a_server_url_that_is_not_a_web_address_is_refused(identity_settings: Settings):
    values = identity_settings.model_dump() | {"server_url": "ftp://files"}
    with pytest.raises(ValidationError, match="http or https"):
        Settings(**values)


async def test_info_has_the_admins_server_name_and_analytics(
    identity: httpx.AsyncClient, login: Login
):
    await identity.put(
        "/api/v1/settings",
        json={"server_name": "research", "enable_analytics": True},
        headers=bearer(await login()),
    )
    body = (await identity.get("/api/v1/info")).json()
    assert (body["name"], body["analytics_enabled"]) == ("research", True)


async def test_a_users_session_moves_the_last_user_activity(
    identity: httpx.AsyncClient, login: Login, clock: Clock
):
    token = await login()
    first = (await identity.get("/api/v1/info")).json()["last_user_activity"]
    clock.advance(minutes=1)
    assert (await identity.get("/api/v1/current-user", headers=bearer(token))).status_code == 200
    then = (await identity.get("/api/v1/info")).json()["last_user_activity"]
    assert then > first
    settings = (await identity.get("/api/v1/settings", headers=bearer(token))).json()["body"]
    assert settings["last_user_activity"] == then
    # Within the next 30 s, not written again.
    clock.advance(seconds=10)
    await identity.get("/api/v1/current-user", headers=bearer(token))
    assert (await identity.get("/api/v1/info")).json()["last_user_activity"] == then
