"""What the run page asks of a run beyond the run itself, as the reference answers it:
its steps, status, pipeline configuration and own logs, a stop and a refresh."""

from __future__ import annotations

import uuid

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import Json, default_store
from tests.tracking.logs.test_endpoints import logs_body
from tests.tracking.pipeline_run.reference_shapes import check_shape
from tests.tracking.step_run.support import post_run, post_step, put, two_step_snapshot


async def started_run(tracking: httpx.AsyncClient, auth: Headers, project: Json) -> Json:
    """A run of the two-step snapshot that an orchestrator took."""
    snapshot = await two_step_snapshot(tracking, auth, project)
    run, _ = await post_run(
        tracking, auth, snapshot, status="running", orchestrator_run_id=uuid.uuid4().hex
    )
    return run


async def test_a_runs_steps_are_listed_by_their_run_and_filtered(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await started_run(tracking, auth, default_project)
    other = await started_run(tracking, auth, default_project)
    make = await post_step(tracking, auth, run, "make_number")
    await post_step(tracking, auth, run, "double")
    await post_step(tracking, auth, other, "make_number")
    path = f"/api/v1/runs/{run['id']}/steps"
    page = (await tracking.get(path, params={"sort_by": "created"}, headers=auth)).json()
    assert page["total"] == 2
    assert [item["name"] for item in page["items"]] == ["make_number", "double"]
    named = await tracking.get(path, params={"name": "make_number"}, headers=auth)
    assert [item["id"] for item in named.json()["items"]] == [make["id"]]
    # Even "or" keeps the page to the run's steps.
    either = await tracking.get(
        path, params={"name": "make_number", "logical_operator": "or"}, headers=auth
    )
    assert [item["id"] for item in either.json()["items"]] == [make["id"]]
    missing = await tracking.get(f"/api/v1/runs/{uuid.uuid4()}/steps", headers=auth)
    assert missing.status_code == 404


async def test_a_runs_status_and_pipeline_configuration_are_answered_alone(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await started_run(tracking, auth, default_project)
    status = await tracking.get(f"/api/v1/runs/{run['id']}/status", headers=auth)
    assert (status.status_code, status.json()) == (200, "running")
    check_shape("ExecutionStatus", status.json())
    config = await tracking.get(f"/api/v1/runs/{run['id']}/pipeline-configuration", headers=auth)
    assert config.status_code == 200
    assert config.json()["name"] == run["resources"]["pipeline"]["name"]
    assert config.json()["substitutions"] == {"date": "2026_11_26", "time": "11_20_25_184481"}


async def test_a_stopped_run_is_stopping_until_its_steps_finish(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await started_run(tracking, auth, default_project)
    step = await post_step(tracking, auth, run, "make_number")
    stop = await tracking.post(f"/api/v1/runs/{run['id']}/stop", headers=auth)
    assert (stop.status_code, stop.json()) == (200, None)
    got = (await tracking.get(f"/api/v1/runs/{run['id']}", headers=auth)).json()
    assert (got["body"]["status"], got["body"]["status_reason"]) == (
        "stopping",
        "Manual stop requested.",
    )
    again = await tracking.post(f"/api/v1/runs/{run['id']}/stop", headers=auth)
    assert again.status_code == 403
    assert again.json()["detail"][1] == "Run is already being stopped."
    await put(tracking, auth, f"/api/v1/steps/{step['id']}", {"status": "stopped"})
    status = await tracking.get(f"/api/v1/runs/{run['id']}/status", headers=auth)
    assert status.json() == "stopped"


async def test_a_run_is_not_stopped_when_finished_or_not_yet_started(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await two_step_snapshot(tracking, auth, default_project)
    announced, _ = await post_run(tracking, auth, snapshot)
    refused = await tracking.post(f"/api/v1/runs/{announced['id']}/stop", headers=auth)
    assert refused.status_code == 403
    assert refused.json()["detail"][1] == (
        "Cannot stop a pipeline run that has no orchestrator run id yet."
    )
    run = await started_run(tracking, auth, default_project)
    for name in ("make_number", "double"):
        await post_step(tracking, auth, run, name, status="completed")
    done = await tracking.post(
        f"/api/v1/runs/{run['id']}/stop", params={"graceful": "true"}, headers=auth
    )
    assert done.status_code == 403
    assert done.json()["detail"][1] == "Cannot stop a run that is already completed."
    bad = await tracking.post(
        f"/api/v1/runs/{run['id']}/stop", params={"graceful": "maybe"}, headers=auth
    )
    assert bad.status_code == 422
    missing = await tracking.post(f"/api/v1/runs/{uuid.uuid4()}/stop", headers=auth)
    assert missing.status_code == 404


async def test_a_refresh_answers_501_since_the_server_asks_no_orchestrator(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await started_run(tracking, auth, default_project)
    refreshed = await tracking.post(f"/api/v1/runs/{run['id']}/refresh", headers=auth)
    assert refreshed.status_code == 501
    assert refreshed.json()["detail"][0] == "NotImplementedError"
    missing = await tracking.post(f"/api/v1/runs/{uuid.uuid4()}/refresh", headers=auth)
    assert missing.status_code == 404


async def test_a_runs_own_logs_are_read_from_the_artifact_store(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    store_id, root = await default_store(tracking, auth)
    run = await started_run(tracking, auth, default_project)
    path = f"/api/v1/runs/{run['id']}/logs"
    none_yet = await tracking.get(path, params={"source": "client"}, headers=auth)
    assert none_yet.status_code == 404
    assert none_yet.json()["detail"] == ["KeyError", f"No logs found for run {run['id']}."]
    folder = root / "logs" / uuid.uuid4().hex
    folder.mkdir(parents=True)
    (folder / "a.log").write_text('{"message": "compiling", "level": 20}\n')
    body = logs_body(default_project, store_id, source="client", pipeline_run_id=run["id"])
    body["uri"] = str(folder)
    assert (await tracking.post("/api/v1/logs", json=body, headers=auth)).status_code == 200
    read = await tracking.get(path, params={"source": "client"}, headers=auth)
    assert read.status_code == 200, read.text
    assert [entry["message"] for entry in read.json()] == ["compiling"]
    for entry in read.json():
        check_shape("LogEntry", entry)
    by_id = await tracking.get(path, params={"logs_id": body["id"]}, headers=auth)
    assert [entry["message"] for entry in by_id.json()] == ["compiling"]
    other = await tracking.get(path, params={"source": "orchestrator"}, headers=auth)
    assert other.json()["detail"] == [
        "KeyError",
        f"No logs found for source 'orchestrator' in run {run['id']}",
    ]
    neither = await tracking.get(path, headers=auth)
    assert neither.status_code == 400
    assert neither.json()["detail"] == ["ValueError", "Either source or logs_id must be provided."]
    outside = logs_body(default_project, store_id, source="outside", pipeline_run_id=run["id"])
    outside["uri"] = "/etc/passwd"
    assert (await tracking.post("/api/v1/logs", json=outside, headers=auth)).status_code == 200
    refused = await tracking.get(path, params={"source": "outside"}, headers=auth)
    assert refused.status_code == 403
