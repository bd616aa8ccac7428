"""``GET``/``PUT /api/v1/settings``: any user reads them, an admin changes them."""

from __future__ import annotations

import re

import httpx
import pytest

from identity.app import create_app
from identity.settings import Settings
from tests.identity.conftest import Clock, Login, bearer
from tests.identity.server_settings.support import assert_reference_shape, member
from tests.support.asgi import client_for


async def test_a_new_server_has_analytics_announcements_and_updates_off(
    identity: httpx.AsyncClient, login: Login, identity_settings: Settings
):
    response = await identity.get("/api/v1/settings", headers=bearer(await login()))
    assert response.status_code == 200
    assert_reference_shape("ServerSettingsResponse", response.json())
    body = response.json()["body"]
    assert body["server_id"] == str(identity_settings.server_id)
    assert body["server_name"] == "platform"
    assert body["logo_url"] is None
    assert body["active"] is True
    assert body["enable_analytics"] is False
    assert body["display_announcements"] is False
    assert body["display_updates"] is False
    assert response.json()["metadata"] == {}
    assert response.json()["resources"] == {}


async def test_an_operator_starts_a_server_with_announcements_and_updates_on(
    identity_settings: Settings, clock: Clock
):
    settings = identity_settings.model_copy(
        update={"display_announcements": True, "display_updates": True, "server_name": "ml"}
    )
    async with client_for(create_app(settings, clock=clock)) as client:
        token = (
            await client.post(
                "/api/v1/login",
                data={"username": "default", "password": "correct horse battery staple"},
            )
        ).json()["access_token"]
        body = (await client.get("/api/v1/settings", headers=bearer(token))).json()["body"]
    assert (body["server_name"], body["display_announcements"], body["display_updates"]) == (
        "ml",
        True,
        True,
    )


async def test_an_unhydrated_read_has_no_metadata(identity: httpx.AsyncClient, login: Login):
    response = await identity.get(
        "/api/v1/settings", params={"hydrate": "false"}, headers=bearer(await login())
    )
    assert response.status_code == 200
    assert response.json()["metadata"] is None
    assert_reference_shape("ServerSettingsResponse", response.json())


async def test_any_user_reads_the_settings(identity: httpx.AsyncClient, login: Login):
    response = await identity.get("/api/v1/settings", headers=bearer(await member(identity, login)))
    assert response.status_code == 200
    assert response.json()["body"]["server_name"] == "platform"


async def test_reading_the_settings_needs_a_login(identity: httpx.AsyncClient):
    response = await identity.get("/api/v1/settings")
    assert response.status_code == 401
    assert_reference_shape("ErrorModel", response.json())


async def test_an_admin_updates_the_settings(
    identity: httpx.AsyncClient, login: Login, clock: Clock
):
    token = await login()
    before = (await identity.get("/api/v1/settings", headers=bearer(token))).json()["body"]
    clock.advance(seconds=5)
    update = {
        "server_name": "research",
        "logo_url": "https://example.com/logo.png",
        "enable_analytics": True,
        "display_announcements": True,
        "display_updates": True,
    }
    response = await identity.put("/api/v1/settings", json=update, headers=bearer(token))
    assert response.status_code == 200
    assert_reference_shape("ServerSettingsResponse", response.json())
    body = response.json()["body"]
    assert {name: body[name] for name in update} == update
    assert body["updated"] > before["updated"]
    again = (await identity.get("/api/v1/settings", headers=bearer(token))).json()["body"]
    assert again == body


async def test_a_partial_update_changes_only_what_it_names(
    identity: httpx.AsyncClient, login: Login
):
    token = await login()
    await identity.put(
        "/api/v1/settings",
        json={"server_name": "research", "display_updates": True},
        headers=bearer(token),
    )
    response = await identity.put(
        "/api/v1/settings",
        json={"display_announcements": True, "server_name": None},
        headers=bearer(token),
    )
    body = response.json()["body"]
    assert (body["server_name"], body["display_updates"], body["display_announcements"]) == (
        "research",
        True,
        True,
    )


async def test_a_null_or_empty_logo_url_removes_the_logo(identity: httpx.AsyncClient, login: Login):
    token = await login()
    for removal in (None, ""):
        await identity.put(
            "/api/v1/settings",
            json={"logo_url": "https://example.com/logo.png"},
            headers=bearer(token),
        )
        response = await identity.put(
            "/api/v1/settings", json={"logo_url": removal}, headers=bearer(token)
        )
        assert response.json()["body"]["logo_url"] is None


async def test_a_user_who_is_not_an_admin_cannot_change_the_settings(
    identity: httpx.AsyncClient, login: Login
):
    token = await member(identity, login)
    for change in ({"server_name": "mine"}, {"enable_analytics": False}, {"logo_url": None}):
        response = await identity.put("/api/v1/settings", json=change, headers=bearer(token))
        assert response.status_code == 403
        assert response.json() == {
            "detail": ["IllegalOperationError", "Only admins can update server settings."]
        }
    body = (await identity.get("/api/v1/settings", headers=bearer(token))).json()["body"]
    assert body["server_name"] == "platform"


async def test_an_update_that_changes_nothing_is_anyones(identity: httpx.AsyncClient, login: Login):
    token = await member(identity, login)
    response = await identity.put(
        "/api/v1/settings", json={"server_name": None}, headers=bearer(token)
    )
    assert response.status_code == 200
    assert response.json()["body"]["server_name"] == "platform"


@pytest.mark.parametrize(
    "update",
    [
        {"server_name": "x" * 256},
        {"logo_url": "javascript:alert(1)"},
        {"enable_analytics": "sometimes"},
        {"display_updates": [True]},
    ],
)
async def test_an_invalid_update_is_422_and_changes_nothing(
    identity: httpx.AsyncClient, login: Login, update: dict[str, object]
):
    token = await login()
    response = await identity.put("/api/v1/settings", json=update, headers=bearer(token))
    assert response.status_code == 422
    assert_reference_shape("ErrorModel", response.json())
    field = next(iter(update))
    assert field in str(response.json()["detail"])
    body = (await identity.get("/api/v1/settings", headers=bearer(token))).json()["body"]
    assert body["server_name"] == "platform"
    assert body["logo_url"] is None


async def test_a_body_that_is_not_an_object_is_422(identity: httpx.AsyncClient, login: Login):
    response = await identity.put("/api/v1/settings", content=b"[1]", headers=bearer(await login()))
    assert response.status_code == 422
    assert_reference_shape("ErrorModel", response.json())


async def test_the_settings_outlive_a_restart_with_other_initial_values(
    identity: httpx.AsyncClient, login: Login, identity_settings: Settings, clock: Clock
):
    await identity.put(
        "/api/v1/settings", json={"server_name": "research"}, headers=bearer(await login())
    )
    settings = identity_settings.model_copy(update={"server_name": "renamed by env"})
    async with client_for(create_app(settings, clock=clock)) as client:
        info = (await client.get("/api/v1/info")).json()
    assert info["name"] == "research"


async def test_a_logo_url_is_http_or_https_as_the_document_says(
    identity: httpx.AsyncClient, login: Login
):
    token = await login()
    document = (await identity.get("/openapi.json")).json()
    update = document["components"]["schemas"]["ServerSettingsUpdate"]["properties"]
    [form] = [s for s in update["logo_url"]["anyOf"] if s.get("type") == "string"]
    for logo, status in (
        ("https://example.com/logo.png", 200),
        ("HTTP://example.com/logo.png", 200),
        ("javascript:alert(1)", 422),
        ("data:image/png;base64,AAAA", 422),
    ):
        response = await identity.put(
            "/api/v1/settings", json={"logo_url": logo}, headers=bearer(token)
        )
        assert response.status_code == status, (logo, response.text)
        assert (re.search(form["pattern"], logo) is not None) == (status == 200), logo


async def test_a_server_name_is_any_text_as_the_reference_stores_it(
    identity: httpx.AsyncClient, login: Login
):
    response = await identity.put(
        "/api/v1/settings", json={"server_name": "ml\tteam"}, headers=bearer(await login())
    )
    assert response.status_code == 200, response.text
    assert response.json()["body"]["server_name"] == "ml\tteam"
