"""Who is calling, under the ``none`` auth scheme: every request runs as the default
account (whatever bearer it carries), a worker or task token still resolves to its own
principal, and routes that write accounts or use passwords refuse."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.agent_accounts.conftest import bearer, register_worker

pytestmark = pytest.mark.parametrize("settings_overrides", [{"server_auth_scheme": "none"}])

ME = "/api/v1/accounts/me"
NOT_MANAGED = {"detail": "This server does not manage its own accounts."}
UNKNOWN = "01900000-0000-7000-8000-000000000000"


async def test_every_request_runs_as_the_default_account(client: httpx.AsyncClient):
    anonymous = await client.get(ME)
    garbage = await client.get(ME, headers=bearer("not-a-token"))
    fake_key = await client.get(ME, headers=bearer("SVCKEY_bm9wZQ=="))

    assert anonymous.status_code == garbage.status_code == fake_key.status_code == 200
    assert anonymous.json()["name"] == garbage.json()["name"] == "default"
    assert fake_key.json()["id"] == anonymous.json()["id"]
    assert (await client.get("/api/v1/info")).json()["auth_scheme"] == "none"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/users", {"name": "someone"}),
        ("/api/v1/service-accounts", {"name": "bot"}),
        (f"/api/v1/users/{UNKNOWN}/deactivate", None),
        (
            f"/api/v1/users/{UNKNOWN}/activate",
            {"activation_token": "x", "password": "a-long-enough-password"},
        ),
    ],
)
async def test_account_writing_routes_refuse(
    client: httpx.AsyncClient, path: str, body: dict[str, Any] | None, settings_overrides
):
    response = await client.post(path, json=body)

    assert response.status_code == 403
    assert response.json() == NOT_MANAGED


async def test_password_and_admin_flag_changes_refuse(client: httpx.AsyncClient):
    me = (await client.get(ME)).json()
    path = f"/api/v1/users/{me['id']}"

    password = await client.patch(
        path, json={"password": "a-long-enough-password", "old_password": "old"}
    )
    assert password.status_code == 403
    assert password.json() == NOT_MANAGED
    metadata = await client.patch(path, json={"metadata": {"team": "ml"}})
    assert metadata.status_code == 200
    assert metadata.json()["metadata"] == {"team": "ml"}


async def test_password_and_api_key_grants_are_unsupported(client: httpx.AsyncClient):
    password = await client.post(
        "/api/v1/login", data={"grant_type": "password", "username": "default", "password": "x"}
    )
    api_key = await client.post("/api/v1/login", data={"grant_type": "api-key"})

    assert password.status_code == api_key.status_code == 400
    assert password.json()["error"] == api_key.json()["error"] == "unsupported_grant_type"


async def test_api_keys_can_still_be_created_and_workers_resolve_to_themselves(
    client: httpx.AsyncClient,
):
    created = await client.post("/api/v1/api-keys", json={"name": "local"})
    assert created.status_code == 201
    worker = await register_worker(client, created.json()["key"])

    heartbeat = await client.post(
        f"/api/v1/workers/{worker['worker']['id']}/heartbeat",
        json={"task_ids": []},
        headers=bearer(worker["token"]),
    )
    assert heartbeat.status_code == 200
    # The worker token is the worker, not the default account: account routes refuse it.
    assert (await client.get(ME, headers=bearer(worker["token"]))).status_code == 403
