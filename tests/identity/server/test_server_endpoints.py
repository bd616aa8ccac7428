"""``/version``, ``/load-info`` and ``/activate``, as ZenML 0.96.3's open-source server
answers them."""

from __future__ import annotations

import httpx

from tests.identity.conftest import Login, bearer


async def test_version_is_the_reference_version_without_auth(identity: httpx.AsyncClient):
    response = await identity.get("/api/v1/version")
    assert response.status_code == 200
    assert response.json() == "0.96.3"


async def test_load_info_counts_this_process_and_its_pool(
    identity: httpx.AsyncClient, login: Login
):
    response = await identity.get("/api/v1/load-info", headers=bearer(await login()))
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {
        "threads", "db_connections_total", "db_connections_active", "db_connections_overflow",
    }  # fmt: skip
    assert body["threads"] >= 1
    # The login and this request used the pool: it keeps at least one connection.
    assert body["db_connections_total"] >= 1
    assert 0 <= body["db_connections_active"] <= body["db_connections_total"]


async def test_load_info_needs_a_login(identity: httpx.AsyncClient):
    response = await identity.get("/api/v1/load-info")
    assert response.status_code == 401


async def test_activate_is_refused_because_the_server_is_already_active(
    identity: httpx.AsyncClient,
):
    response = await identity.put(
        "/api/v1/activate", json={"admin_username": "root", "admin_password": "x" * 12}
    )
    assert response.status_code == 403
    assert response.json() == {"detail": ["IllegalOperationError", "The server is already active."]}


async def test_activate_validates_its_body_first(identity: httpx.AsyncClient):
    response = await identity.put("/api/v1/activate", json={"enable_analytics": "maybe"})
    assert response.status_code == 422
