from __future__ import annotations

import httpx

from tests.agent_accounts.conftest import NewKey, bearer
from tests.agent_accounts.conftest import register_worker as _worker


async def test_worker_token_renews_with_the_key_and_is_refused_on_the_renew_route(
    client: httpx.AsyncClient, new_key: NewKey
):
    key = (await new_key())["key"]
    worker = await _worker(client, key)
    path = f"/api/v1/workers/{worker['worker']['id']}/token"
    assert (await client.post(path, headers=bearer(key))).status_code == 200
    refused = await client.post(path, headers=bearer(worker["token"]))
    assert refused.status_code == 403
    assert (
        await client.get("/api/v1/accounts/me", headers=bearer(worker["token"]))
    ).status_code == 403


async def test_task_token_reads_only_its_allowlist_and_is_fenced_after_requeue(
    client: httpx.AsyncClient, admin, new_key: NewKey
):
    allowed = (await client.post("/api/v1/sessions", json={"name": "a"}, headers=admin)).json()
    other = (await client.post("/api/v1/sessions", json={"name": "b"}, headers=admin)).json()
    task = await client.post(
        "/api/v1/tasks",
        json={"kind": "evaluator", "timeout_seconds": 300, "session_ids": [allowed["id"]]},
        headers=admin,
    )
    assert task.status_code == 201
    worker = await _worker(client, (await new_key())["key"])
    claimed = (await client.post("/api/v1/tasks/claim", json={"max_tasks": 1},
                                 headers=bearer(worker["token"]))).json()["tasks"]  # fmt: skip
    assert len(claimed) == 1
    token = bearer(claimed[0]["token"])
    assert (await client.get(f"/api/v1/sessions/{allowed['id']}", headers=token)).status_code == 200
    refused = await client.get(f"/api/v1/sessions/{other['id']}", headers=token)
    assert refused.status_code == 403
    assert refused.json()["detail"].endswith("is not accessible to this caller")
    assert (await client.get("/api/v1/accounts", headers=token)).status_code == 403
    await client.post(f"/api/v1/tasks/{task.json()['id']}/requeue", headers=admin)
    await client.post("/api/v1/tasks/claim", json={}, headers=bearer(worker["token"]))
    assert (await client.get(f"/api/v1/sessions/{allowed['id']}", headers=token)).status_code == 401


async def test_task_token_expiry_is_the_timeout_plus_leeway(
    client: httpx.AsyncClient, admin, new_key: NewKey
):
    import jwt

    await client.post(
        "/api/v1/tasks", json={"kind": "evaluator", "timeout_seconds": 300}, headers=admin
    )
    worker = await _worker(client, (await new_key())["key"])
    claimed = (await client.post("/api/v1/tasks/claim", headers=bearer(worker["token"]))).json()
    claims = jwt.decode(claimed["tasks"][0]["token"], options={"verify_signature": False})
    assert claims["exp"] - int(claims["iat"]) in (600, 601)
