"""Workers: registration (and the 426 for old clients), heartbeat, list with liveness,
get and delete."""

from __future__ import annotations

import httpx
import pytest

from tests.agent_accounts.conftest import Clock, NewKey, NewUser, bearer, register_worker


async def test_registration_answers_a_worker_token_and_the_worker(
    client: httpx.AsyncClient, new_key: NewKey
):
    key = await new_key()
    registered = await register_worker(client, key["key"], name="gpu-1")

    worker = registered["worker"]
    assert registered["token"]
    assert registered["token_expires_at"]
    assert worker["name"] == "gpu-1"
    assert worker["owner_id"] == key["owner_id"]
    assert worker["scope"] == {"claims": [{"kind": "evaluator"}]}
    assert worker["runtime"] == {"platform": "bare"}
    assert worker["live"] is True


@pytest.mark.parametrize("client_header", ["kitaru-python/0.22.2", "kitaru-python/0.9.0/abc"])
async def test_old_clients_are_refused_with_426(
    client: httpx.AsyncClient, new_key: NewKey, client_header: str
):
    body = {"name": "w", "scope": {"claims": [{"kind": "evaluator"}]},
            "runtime": {"platform": "bare"}}  # fmt: skip
    response = await client.post(
        "/api/v1/workers",
        json=body,
        headers={**bearer((await new_key())["key"]), "X-Kitaru-Client": client_header},
    )

    assert response.status_code == 426
    assert response.json() == {"detail": "This client is too old for this server; upgrade kitaru."}


async def test_newer_clients_register(client: httpx.AsyncClient, new_key: NewKey):
    registered = await register_worker(
        client, (await new_key())["key"], **{"X-Kitaru-Client": "kitaru-python/0.22.3"}
    )

    assert registered["worker"]["name"] == "w"


async def test_heartbeat_keeps_a_worker_live_and_lists_only_live_ones(
    client: httpx.AsyncClient, new_key: NewKey, clock: Clock, admin
):
    key = (await new_key())["key"]
    beating = await register_worker(client, key, name="beating")
    silent = await register_worker(client, key, name="silent")
    clock.advance(seconds=59)
    heartbeat = await client.post(
        f"/api/v1/workers/{beating['worker']['id']}/heartbeat",
        json={"task_ids": []},
        headers=bearer(beating["token"]),
    )
    assert heartbeat.status_code == 200
    assert heartbeat.json() == {"cancel_task_ids": []}
    clock.advance(seconds=2)  # silent was last seen 61 s ago

    listed = (await client.get("/api/v1/workers", headers=admin)).json()
    assert [w["name"] for w in listed["items"]] == ["beating"]
    assert listed["items"][0]["live"] is True
    stale = await client.get("/api/v1/workers", params={"include_stale": "true"}, headers=admin)
    assert {w["name"]: w["live"] for w in stale.json()["items"]} == {
        "beating": True,
        "silent": False,
    }
    got = await client.get(f"/api/v1/workers/{silent['worker']['id']}", headers=admin)
    assert got.status_code == 200
    assert got.json()["live"] is False


async def test_heartbeat_for_another_worker_is_403(client: httpx.AsyncClient, new_key: NewKey):
    key = (await new_key())["key"]
    mine = await register_worker(client, key, name="mine")
    other = await register_worker(client, key, name="other")

    response = await client.post(
        f"/api/v1/workers/{other['worker']['id']}/heartbeat",
        json={"task_ids": []},
        headers=bearer(mine["token"]),
    )
    assert response.status_code == 403


async def test_heartbeat_needs_a_worker_token(client: httpx.AsyncClient, new_key: NewKey, admin):
    worker = await register_worker(client, (await new_key())["key"])

    response = await client.post(
        f"/api/v1/workers/{worker['worker']['id']}/heartbeat", json={"task_ids": []}, headers=admin
    )
    assert response.status_code == 403


async def test_get_of_an_unknown_worker_is_404(client: httpx.AsyncClient, admin):
    response = await client.get(
        "/api/v1/workers/01900000-0000-7000-8000-000000000000", headers=admin
    )

    assert response.status_code == 404
    assert response.json() == {
        "detail": "Worker 01900000-0000-7000-8000-000000000000 was not found"
    }


async def test_the_registering_account_deletes_its_worker_and_its_token_stops(
    client: httpx.AsyncClient, new_key: NewKey, new_user: NewUser, admin
):
    worker = await register_worker(client, (await new_key())["key"])
    path = f"/api/v1/workers/{worker['worker']['id']}"
    _, other = await new_user()

    assert (await client.delete(path, headers=other)).status_code == 403
    assert (await client.delete(path, headers=admin)).status_code == 204
    assert (await client.get(path, headers=admin)).status_code == 404
    heartbeat = await client.post(
        f"{path}/heartbeat", json={"task_ids": []}, headers=bearer(worker["token"])
    )
    assert heartbeat.status_code == 401


async def test_bad_heartbeat_bodies_are_422(client: httpx.AsyncClient, new_key: NewKey):
    worker = await register_worker(client, (await new_key())["key"])

    response = await client.post(
        f"/api/v1/workers/{worker['worker']['id']}/heartbeat",
        json={"task_ids": ["nope"]},
        headers=bearer(worker["token"]),
    )
    assert response.status_code == 422
