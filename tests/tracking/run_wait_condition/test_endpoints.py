"""``/run_wait_conditions``: only for dynamic runs, one pending per run, an idempotent
create, the poller's lease, resolution checked against the JSON schema, what a
resolution does to the run, and the list's filters."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers, names
from tests.tracking.pipeline_run.support import create_snapshot

CONDITIONS = "/api/v1/run_wait_conditions"
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
Json = dict[str, Any]


async def new_run(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, dynamic: bool = True
) -> Json:
    snapshot = await create_snapshot(tracking, auth, project, is_dynamic=dynamic)
    body = {
        "project": project["id"],
        "name": f"run-{uuid.uuid4().hex[:8]}",
        "snapshot": snapshot["id"],
        "status": "running",
    }
    response = await tracking.post("/api/v1/runs", json=body, headers=auth)
    assert response.status_code == 200, response.text
    run: Json = response.json()[0]
    return run


async def post_condition(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, run: Json, **extra: Any
) -> httpx.Response:
    body = {
        "project": project["id"],
        "run": run["id"],
        "name": "approve",
        "type": "external_input",
        "question": "Ship it?",
        "data_schema": SCHEMA,
        **extra,
    }
    return await tracking.post(CONDITIONS, json=body, headers=auth)


async def run_status(tracking: httpx.AsyncClient, auth: Headers, run: Json) -> tuple[str, str]:
    body = (await tracking.get(f"/api/v1/runs/{run['id']}", headers=auth)).json()["body"]
    return body["status"], body["status_reason"]


async def test_create_renders_the_reference_envelope_once_per_name(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await new_run(tracking, auth, default_project)
    response = await post_condition(
        tracking, auth, default_project, run, metadata={"approver": "ops", "level": 2}
    )
    assert response.status_code == 200, response.text
    condition = response.json()
    assert list(condition) == ["body", "metadata", "resources", "id", "permission_denied", "name"]
    body = condition["body"]
    assert (body["type"], body["status"], body["project_id"]) == (
        "external_input",
        "pending",
        default_project["id"],
    )
    assert body["resolved_at"] is None
    assert body["poller_instance_id"] is None
    metadata = condition["metadata"]
    assert metadata["question"] == "Ship it?"
    assert metadata["data_schema"] == SCHEMA
    assert metadata["run_metadata"] == {"approver": "ops", "level": 2}
    assert (metadata["resolution"], metadata["result"]) == (None, None)
    assert condition["resources"]["run"]["id"] == run["id"]
    assert condition["resources"]["run"]["metadata"] is None
    again = await post_condition(tracking, auth, default_project, run)
    assert again.json()["id"] == condition["id"]
    changed = await post_condition(tracking, auth, default_project, run, question="Other?")
    assert changed.status_code == 409
    assert changed.json()["detail"][0] == "EntityExistsError"
    second = await post_condition(tracking, auth, default_project, run, name="second")
    assert second.status_code == 403
    assert second.json()["detail"][1].startswith("Only one pending wait condition")
    got = await tracking.get(f"{CONDITIONS}/{condition['id']}", headers=auth)
    assert got.json() == condition


async def test_a_run_shows_its_pending_condition(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await new_run(tracking, auth, default_project)
    assert run["resources"]["active_wait_condition"] is None
    condition = (await post_condition(tracking, auth, default_project, run)).json()
    shown = (await tracking.get(f"/api/v1/runs/{run['id']}", headers=auth)).json()
    active = shown["resources"]["active_wait_condition"]
    assert (active["id"], active["name"], active["body"]) == (
        condition["id"],
        "approve",
        condition["body"],
    )
    assert (active["metadata"], active["resources"]) == (None, None)
    listed = await tracking.get("/api/v1/runs", params={"id": run["id"]}, headers=auth)
    assert listed.json()["items"][0]["resources"]["active_wait_condition"]["id"] == condition["id"]
    await tracking.put(
        f"{CONDITIONS}/{condition['id']}/resolve", json={"resolution": "abort"}, headers=auth
    )
    after = (await tracking.get(f"/api/v1/runs/{run['id']}", headers=auth)).json()
    assert after["resources"]["active_wait_condition"] is None


async def test_static_runs_do_not_wait(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await new_run(tracking, auth, default_project, dynamic=False)
    response = await post_condition(tracking, auth, default_project, run)
    assert response.status_code == 403
    assert response.json()["detail"] == [
        "IllegalOperationError",
        "Wait conditions are only supported for dynamic pipelines.",
    ]
    missing = await post_condition(tracking, auth, default_project, {"id": str(uuid.uuid4())})
    assert missing.status_code == 404


async def test_lease_then_resolution_with_a_checked_result(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await new_run(tracking, auth, default_project)
    condition = (await post_condition(tracking, auth, default_project, run)).json()
    one = f"{CONDITIONS}/{condition['id']}"
    lease = {"poller_instance_id": "poller-1", "poller_lease_expires_at": "2999-01-01T00:00:00"}
    refreshed = await tracking.put(one, json=lease, headers=auth)
    assert refreshed.status_code == 200, refreshed.text
    assert refreshed.json() == "pending"
    body = (await tracking.get(one, headers=auth)).json()["body"]
    assert body["poller_instance_id"] == "poller-1"
    assert body["poller_lease_expires_at"].startswith("2999-01-01T00:00:00")
    assert body["last_polled_at"] is not None
    finalized = await tracking.put(one, json={**lease, "mode": "finalize"}, headers=auth)
    assert finalized.json() == "pending"
    assert await run_status(tracking, auth, run) == ("paused", "Waiting for input.")
    wrong = await tracking.put(
        f"{one}/resolve", json={"resolution": "continue", "result": {"ok": "yes"}}, headers=auth
    )
    assert wrong.status_code == 400
    assert wrong.json()["detail"][1] == "Value `{'ok': 'yes'}` does not match expected schema."
    resolved = await tracking.put(
        f"{one}/resolve", json={"resolution": "continue", "result": {"ok": True}}, headers=auth
    )
    assert resolved.status_code == 200, resolved.text
    condition = resolved.json()
    assert condition["body"]["status"] == "resolved"
    assert condition["body"]["resolved_by_user_id"] is not None
    assert (condition["metadata"]["resolution"], condition["metadata"]["result"]) == (
        "continue",
        {"ok": True},
    )
    # Nobody polls (the lease was released) and this server cannot resume the run.
    assert await run_status(tracking, auth, run) == ("paused", "Waiting for manual resume.")
    twice = await tracking.put(f"{one}/resolve", json={"resolution": "abort"}, headers=auth)
    assert twice.status_code == 403
    assert twice.json()["detail"][1] == "Wait condition has already been resolved."
    late = await tracking.put(one, json=lease, headers=auth)
    assert late.json() == "resolved"


async def test_abort_stops_the_run_and_a_schemaless_condition_takes_no_result(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await new_run(tracking, auth, default_project)
    condition = (
        await post_condition(tracking, auth, default_project, run, data_schema=None)
    ).json()
    resolve = f"{CONDITIONS}/{condition['id']}/resolve"
    refused = await tracking.put(
        resolve, json={"resolution": "continue", "result": 1}, headers=auth
    )
    assert refused.status_code == 403
    assert refused.json()["detail"][1] == (
        "Wait conditions without a schema do not accept a result."
    )
    aborted = await tracking.put(resolve, json={"resolution": "abort", "result": 1}, headers=auth)
    assert aborted.status_code == 200, aborted.text
    assert aborted.json()["metadata"]["result"] is None
    assert await run_status(tracking, auth, run) == ("stopped", "Wait condition was aborted.")


async def test_list_filters_by_run_status_and_resolution(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    first = await new_run(tracking, auth, default_project)
    second = await new_run(tracking, auth, default_project)
    a = (await post_condition(tracking, auth, default_project, first, name="a")).json()
    await post_condition(tracking, auth, default_project, second, name="b")
    await tracking.put(
        f"{CONDITIONS}/{a['id']}/resolve", json={"resolution": "abort"}, headers=auth
    )
    listed = await tracking.get(CONDITIONS, params={"sort_by": "asc:name"}, headers=auth)
    assert names(listed) == ["a", "b"]
    assert listed.json()["items"][0]["metadata"] is None
    by_run = await tracking.get(CONDITIONS, params={"pipeline_run": first["name"]}, headers=auth)
    assert names(by_run) == ["a"]
    pending = await tracking.get(CONDITIONS, params={"status": "pending"}, headers=auth)
    assert names(pending) == ["b"]
    aborted = await tracking.get(CONDITIONS, params={"resolution": "abort"}, headers=auth)
    assert names(aborted) == ["a"]
    hydrated = await tracking.get(CONDITIONS, params={"hydrate": "true", "name": "b"}, headers=auth)
    assert hydrated.json()["items"][0]["metadata"]["question"] == "Ship it?"
    unknown = await tracking.get(f"{CONDITIONS}/{uuid.uuid4()}", headers=auth)
    assert unknown.status_code == 404
