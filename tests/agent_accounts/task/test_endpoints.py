from __future__ import annotations

import hashlib
from typing import Any

import httpx
import pytest

from tests.agent_accounts.conftest import NewKey, NewUser, bearer, stored_rows
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


async def _task_token(
    client: httpx.AsyncClient, admin: dict[str, str], new_key: NewKey, **allowlist: list[str]
) -> dict[str, str]:
    """Headers of the task token a worker gets for a new task with ``allowlist``."""
    task = await client.post(
        "/api/v1/tasks", json={"kind": "evaluator", "timeout_seconds": 60, **allowlist},
        headers=admin,
    )  # fmt: skip
    assert task.status_code == 201, task.text
    worker = await _worker(client, (await new_key())["key"])
    claimed = await client.post("/api/v1/tasks/claim", headers=bearer(worker["token"]))
    [item] = claimed.json()["tasks"]
    return bearer(item["token"])


async def _upload(client: httpx.AsyncClient, content: bytes, headers: dict[str, str]) -> Any:
    response = await client.post(
        "/api/v1/blobs",
        content=content,
        headers={**headers, "Content-Type": "application/octet-stream"},
    )
    assert response.status_code == 201, response.text
    return response.json()


async def test_blob_upload_and_download_round_trip(client: httpx.AsyncClient, admin):
    content = bytes(range(256)) * 4
    blob = await _upload(client, content, admin)

    assert blob["size"] == 1024
    assert blob["sha256"] == hashlib.sha256(content).hexdigest()
    downloaded = await client.get(f"/api/v1/blobs/{blob['id']}", headers=admin)
    assert downloaded.status_code == 200
    assert downloaded.headers["content-type"] == "application/octet-stream"
    assert downloaded.content == content


async def test_blob_content_route_downloads_the_blob(client: httpx.AsyncClient, admin):
    blob = await _upload(client, b"kitaru's download route", admin)

    downloaded = await client.get(f"/api/v1/blobs/{blob['id']}/content", headers=admin)

    assert downloaded.status_code == 200
    assert downloaded.content == b"kitaru's download route"


@pytest.mark.parametrize("settings_overrides", [{"max_blob_size_bytes": 16}])
async def test_blob_above_the_size_limit_is_413_and_not_stored(
    client: httpx.AsyncClient, admin, agent_settings
):
    assert (await _upload(client, b"x" * 16, admin))["size"] == 16
    response = await client.post("/api/v1/blobs", content=b"x" * 17, headers=admin)

    assert response.status_code == 413
    assert response.json() == {"detail": "The blob is larger than the server accepts."}
    assert len(await stored_rows(agent_settings, "SELECT id FROM blobs")) == 1


async def test_task_token_reads_only_its_allowlisted_blobs_and_those_it_wrote(
    client: httpx.AsyncClient, admin, new_key: NewKey
):
    allowed = await _upload(client, b"allowed", admin)
    other = await _upload(client, b"other", admin)
    token = await _task_token(client, admin, new_key, blob_ids=[allowed["id"]])

    assert (await client.get(f"/api/v1/blobs/{allowed['id']}", headers=token)).content == b"allowed"
    refused = await client.get(f"/api/v1/blobs/{other['id']}", headers=token)
    assert refused.status_code == 403
    written = await _upload(client, b"result", token)
    assert (await client.get(f"/api/v1/blobs/{written['id']}", headers=token)).content == b"result"
    assert (await client.get(f"/api/v1/blobs/{written['id']}", headers=admin)).status_code == 200


async def test_workers_may_not_upload_blobs(client: httpx.AsyncClient, new_key: NewKey):
    worker = await _worker(client, (await new_key())["key"])

    response = await client.post("/api/v1/blobs", content=b"x", headers=bearer(worker["token"]))
    assert response.status_code == 403


async def test_session_update_replaces_its_data_within_the_allowlist(
    client: httpx.AsyncClient, admin, new_key: NewKey
):
    allowed = (await client.post("/api/v1/sessions", json={"name": "a"}, headers=admin)).json()
    other = (await client.post("/api/v1/sessions", json={"name": "b"}, headers=admin)).json()
    token = await _task_token(client, admin, new_key, session_ids=[allowed["id"]])

    by_admin = await client.patch(
        f"/api/v1/sessions/{allowed['id']}", json={"data": {"step": 1}}, headers=admin
    )
    assert by_admin.status_code == 200
    assert by_admin.json()["data"] == {"step": 1}
    by_task = await client.patch(
        f"/api/v1/sessions/{allowed['id']}", json={"data": {"step": 2}}, headers=token
    )
    assert by_task.status_code == 200
    read = await client.get(f"/api/v1/sessions/{allowed['id']}", headers=admin)
    assert read.json()["data"] == {"step": 2}
    refused = await client.patch(
        f"/api/v1/sessions/{other['id']}", json={"data": {"x": 1}}, headers=token
    )
    assert refused.status_code == 403
    assert (await client.get(f"/api/v1/sessions/{other['id']}", headers=admin)).json()["data"] == {}


async def test_session_update_of_an_unknown_session_is_404_and_bad_bodies_422(
    client: httpx.AsyncClient, admin
):
    unknown = "/api/v1/sessions/01900000-0000-7000-8000-000000000000"
    assert (await client.patch(unknown, json={"data": {}}, headers=admin)).status_code == 404
    row = (await client.post("/api/v1/sessions", json={"name": "a"}, headers=admin)).json()
    path = f"/api/v1/sessions/{row['id']}"
    assert (await client.patch(path, json={"data": [1]}, headers=admin)).status_code == 422
    assert (await client.patch(path, json={}, headers=admin)).status_code == 422


@pytest.mark.parametrize("settings_overrides", [{"max_task_timeout": "PT1H"}])
async def test_task_timeout_above_the_maximum_is_422(client: httpx.AsyncClient, admin):
    def body(timeout: int) -> dict[str, Any]:
        return {"kind": "evaluator", "timeout_seconds": timeout}

    at_limit = await client.post("/api/v1/tasks", json=body(3600), headers=admin)
    above = await client.post("/api/v1/tasks", json=body(3601), headers=admin)

    assert at_limit.status_code == 201
    assert above.status_code == 422
    assert "maximum task timeout" in str(above.json()["detail"])
    assert (await client.post("/api/v1/tasks", json=body(0), headers=admin)).status_code == 422


async def test_task_with_an_unknown_session_is_422(client: httpx.AsyncClient, admin):
    response = await client.post(
        "/api/v1/tasks",
        json={"kind": "evaluator", "timeout_seconds": 60,
              "session_ids": ["01900000-0000-7000-8000-000000000000"]},
        headers=admin,
    )  # fmt: skip

    assert response.status_code == 422


AGENT_RUN = {"command": "echo hi", "working_dir": "/tmp", "env": {"MODE": "test"}}


async def _claimed_agent_task(
    client: httpx.AsyncClient, admin: dict[str, str], new_key: NewKey
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """A new agent task claimed by a new worker: its id, token headers and claimed item."""
    task = await client.post(
        "/api/v1/tasks", json={"kind": "agent", "timeout_seconds": 60, "run": AGENT_RUN},
        headers=admin,
    )  # fmt: skip
    assert task.status_code == 201, task.text
    [item] = await _claim_agent_tasks(client, new_key)
    return task.json()["id"], bearer(item["token"]), item


async def _claim_agent_tasks(
    client: httpx.AsyncClient,
    new_key: NewKey,
    headers: dict[str, str] | None = None,
    kinds: tuple[str, ...] = ("agent",),
) -> list[dict[str, Any]]:
    """Tasks claimed by a new worker of ``headers``'s account (the admin's by default)."""
    key = (await new_key(headers))["key"]
    claims = [{"kind": kind} for kind in kinds]
    body = {"name": "w", "scope": {"claims": claims}, "runtime": {"platform": "x"}}
    worker = (await client.post("/api/v1/workers", json=body, headers=bearer(key))).json()
    claimed = await client.post("/api/v1/tasks/claim", headers=bearer(worker["token"]))
    items: list[dict[str, Any]] = claimed.json()["tasks"]
    return items


async def _report(
    client: httpx.AsyncClient, task_id: str, headers: dict[str, str], **body: Any
) -> httpx.Response:
    return await client.patch(f"/api/v1/tasks/{task_id}", json=body, headers=headers)


async def test_claimed_agent_task_carries_its_command_in_the_spec(
    client: httpx.AsyncClient, admin, new_key: NewKey
):
    task_id, _, item = await _claimed_agent_task(client, admin, new_key)

    assert item["spec"] == {
        "task_id": task_id, "kind": "agent", "timeout_seconds": 60, "run": AGENT_RUN,
    }  # fmt: skip
    assert item["task"]["status"] == "claimed"


async def test_a_task_is_its_own_job_in_kitarus_task_shape(
    client: httpx.AsyncClient, admin, new_key: NewKey
):
    """kitaru's task model requires a job, a failure policy and labels (its UI's worker
    page shortens every claimed task's ``job_id``): each task here is a job of its own."""
    task_id, _, item = await _claimed_agent_task(client, admin, new_key)
    listed = await client.get(
        "/api/v1/tasks", params={"filter": f'{{"field":"job_id","op":"eq","value":"{task_id}"}}'},
        headers=admin,
    )  # fmt: skip
    read = await client.get(f"/api/v1/tasks/{task_id}", headers=admin)

    for task in (item["task"], read.json(), *listed.json()["items"]):
        assert (task["id"], task["job_id"]) == (task_id, task_id)
        assert (task["on_failure"], task["labels"]) == ("abort", {})
    assert [t["id"] for t in listed.json()["items"]] == [task_id]


async def test_an_agent_task_is_claimed_only_by_its_own_accounts_workers(
    client: httpx.AsyncClient, admin, new_key: NewKey, new_user: NewUser
):
    """An agent task runs a shell command: another account's worker never gets it, while
    other kinds stay shared by every worker (the reference's trusted-team model)."""
    for body in (
        {"kind": "agent", "timeout_seconds": 60, "run": AGENT_RUN},
        {"kind": "evaluator", "timeout_seconds": 60},
    ):
        response = await client.post("/api/v1/tasks", json=body, headers=admin)
        assert response.status_code == 201, response.text
    _, other = await new_user()

    taken = await _claim_agent_tasks(client, new_key, other, kinds=("agent", "evaluator"))

    assert [item["spec"]["kind"] for item in taken] == ["evaluator"]
    [own] = await _claim_agent_tasks(client, new_key)
    assert own["spec"]["kind"] == "agent"


@pytest.mark.parametrize(
    "body",
    [
        {"kind": "agent", "timeout_seconds": 60},
        {"kind": "evaluator", "timeout_seconds": 60, "run": {"command": "true"}},
        {"kind": "agent", "timeout_seconds": 60, "run": {"command": ""}},
        {"kind": "agent", "timeout_seconds": 60,
         "run": {"command": "true", "env": {"SERVICE_API_KEY": "x"}}},
        {"kind": "agent", "timeout_seconds": 60,
         "run": {"command": "true", "env": {"service_task_id": "x"}}},
        {"kind": "agent", "timeout_seconds": 60, "run": {"command": "true", "env": {"A=B": "x"}}},
    ],
    ids=["agent-without-command", "command-on-evaluator", "empty-command", "contract-variable",
         "contract-prefix", "bad-variable-name"],
)  # fmt: skip
async def test_task_run_rules_are_422(client: httpx.AsyncClient, admin, body: dict[str, Any]):
    response = await client.post("/api/v1/tasks", json=body, headers=admin)

    assert response.status_code == 422, response.text


async def test_task_token_reports_running_then_completed_with_its_result(
    client: httpx.AsyncClient, admin, new_key: NewKey
):
    task_id, token, _ = await _claimed_agent_task(client, admin, new_key)

    running = await _report(client, task_id, token, status="running")
    assert running.status_code == 200, running.text
    assert running.json()["started_at"] is not None
    done = await _report(client, task_id, token, status="completed", result={"exit_code": 0})
    assert done.status_code == 200, done.text
    read = (await client.get(f"/api/v1/tasks/{task_id}", headers=admin)).json()
    assert read["status"] == "completed"
    assert read["result"] == {"exit_code": 0}
    assert read["ended_at"] is not None
    assert read["error"] is None


async def test_task_report_out_of_order_is_409_and_changes_nothing(
    client: httpx.AsyncClient, admin, new_key: NewKey
):
    task_id, token, _ = await _claimed_agent_task(client, admin, new_key)

    early = await _report(client, task_id, token, status="completed")
    assert early.status_code == 409
    assert early.json() == {"detail": "A claimed task cannot become completed."}
    assert (await _report(client, task_id, token, status="pending")).status_code == 409
    failed = await _report(client, task_id, token, status="failed", error="boom")
    assert failed.status_code == 200
    assert (await _report(client, task_id, token, status="running")).status_code == 409
    read = (await client.get(f"/api/v1/tasks/{task_id}", headers=admin)).json()
    assert (read["status"], read["error"]) == ("failed", "boom")
    requeue = await client.post(f"/api/v1/tasks/{task_id}/requeue", headers=admin)
    assert requeue.status_code == 409


async def test_task_result_above_the_limit_is_413_and_not_stored(
    client: httpx.AsyncClient, admin, new_key: NewKey
):
    task_id, token, _ = await _claimed_agent_task(client, admin, new_key)
    await _report(client, task_id, token, status="running")

    big = await _report(client, task_id, token, status="completed", result="x" * (1024 * 1024))
    assert big.status_code == 413
    read = (await client.get(f"/api/v1/tasks/{task_id}", headers=admin)).json()
    assert (read["status"], read["result"]) == ("running", None)


async def test_only_the_tasks_current_attempt_may_report(
    client: httpx.AsyncClient, admin, new_key: NewKey
):
    task_id, token, _ = await _claimed_agent_task(client, admin, new_key)
    other_id, other_token, _ = await _claimed_agent_task(client, admin, new_key)

    assert (await _report(client, task_id, other_token, status="running")).status_code == 403
    assert (await _report(client, task_id, admin, status="running")).status_code == 403
    unknown = "01900000-0000-7000-8000-000000000000"
    assert (await _report(client, unknown, token, status="running")).status_code == 403
    assert (await _report(client, task_id, token, status="bogus")).status_code == 422
    await client.post(f"/api/v1/tasks/{task_id}/requeue", headers=admin)
    assert (await _report(client, task_id, token, status="running")).status_code == 409
    [again] = await _claim_agent_tasks(client, new_key)
    assert again["task"]["attempt"] == 2
    assert (await _report(client, task_id, token, status="running")).status_code == 401
    assert (await _report(client, task_id, bearer(again["token"]), status="running")).is_success
    assert (await _report(client, other_id, other_token, status="running")).status_code == 200
