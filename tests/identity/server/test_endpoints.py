"""``/info`` and the first admin."""

from __future__ import annotations

import httpx
import pytest
from pydantic import SecretStr

from identity.app import create_app
from tests.identity.conftest import make_settings
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
