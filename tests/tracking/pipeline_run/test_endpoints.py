"""Runs and step runs: created, read, linked to artifact versions, deleted."""

from __future__ import annotations

import uuid

import httpx

from tests.tracking.artifact.support import Headers, new_project
from tests.tracking.artifact_version.support import VERSIONS, Json, create_version
from tests.tracking.pipeline_run.support import (
    create_pipeline,
    create_run,
    create_snapshot,
    create_step,
)


async def test_post_runs_creates_then_returns_the_existing_run(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await create_snapshot(tracking, auth, default_project)
    body = {
        "project": default_project["id"],
        "name": "nightly",
        "snapshot": snapshot["id"],
        "status": "running",
    }
    first = await tracking.post("/api/v1/runs", json=body, headers=auth)
    again = await tracking.post("/api/v1/runs", json=body, headers=auth)
    assert first.status_code == again.status_code == 200
    (run, created), (same, created_again) = first.json(), again.json()
    assert (created, created_again) == (True, False)
    assert same["id"] == run["id"]
    assert run["body"]["status"] == "running"
    assert run["body"]["in_progress"] is True
    assert run["body"]["index"] == 1
    assert run["resources"]["snapshot"]["id"] == snapshot["id"]
    assert run["resources"]["pipeline"]["id"] == snapshot["body"]["pipeline_id"]


async def test_empty_names_are_taken_as_the_reference_takes_them(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    """A pipeline, a run and a step may each be named ""."""
    pipeline = await create_pipeline(tracking, auth, default_project, name="")
    assert pipeline["name"] == ""
    snapshot = await create_snapshot(tracking, auth, default_project, pipeline)
    body = {
        "project": default_project["id"],
        "name": "",
        "snapshot": snapshot["id"],
        "status": "running",
    }
    response = await tracking.post("/api/v1/runs", json=body, headers=auth)
    assert response.status_code == 200, response.text
    run = response.json()[0]
    assert run["name"] == ""
    step = await create_step(tracking, auth, default_project, run, name="")
    assert step["name"] == ""


async def test_runs_filter_by_index_times_and_trigger(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await create_snapshot(tracking, auth, default_project)
    body = {
        "project": default_project["id"],
        "name": "timed",
        "snapshot": snapshot["id"],
        "status": "running",
        "start_time": "2030-01-01T10:00:00",
    }
    response = await tracking.post("/api/v1/runs", json=body, headers=auth)
    assert response.status_code == 200, response.text
    await create_run(tracking, auth, default_project)

    async def listed(*params: tuple[str, str]) -> list[str]:
        page = await tracking.get("/api/v1/runs", params=list(params), headers=auth)
        assert page.status_code == 200, page.text
        return [item["name"] for item in page.json()["items"]]

    assert await listed(("start_time", "gte:2030-01-01T11:00:00+02:00")) == ["timed"]
    assert await listed(("start_time", "gt:2030-01-01T10:00:00Z")) == []
    assert await listed(("end_time", "isnotnull:")) == []
    assert await listed(("trigger_id", str(uuid.uuid4()))) == []
    assert len(await listed(("trigger_id", "isnull:"))) == 2
    assert len(await listed(("index", "gte:1"))) == 2


async def test_no_run_has_a_parent_run_to_filter_by(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)

    async def listed(value: str) -> list[str]:
        params = {"parent_run_id": value}
        page = await tracking.get("/api/v1/runs", params=params, headers=auth)
        assert page.status_code == 200, page.text
        return [item["id"] for item in page.json()["items"]]

    assert await listed(run["id"]) == []
    assert await listed("isnull:") == [run["id"]]
    assert await listed(f"notequals:{run['id']}") == [run["id"]]


async def test_run_with_an_unknown_snapshot_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    body = {
        "project": default_project["id"],
        "name": "r",
        "snapshot": str(uuid.uuid4()),
        "status": "running",
    }
    response = await tracking.post("/api/v1/runs", json=body, headers=auth)
    assert response.status_code == 404


async def test_run_with_a_snapshot_of_another_project_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    other = await new_project(tracking, auth, "other")
    snapshot = await create_snapshot(tracking, auth, other)
    body = {
        "project": default_project["id"],
        "name": "r",
        "snapshot": snapshot["id"],
        "status": "running",
    }
    response = await tracking.post("/api/v1/runs", json=body, headers=auth)
    assert response.status_code == 404
    assert "was not found in the" in response.json()["detail"][1]


async def test_finished_run_is_not_in_progress(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project, status="completed")
    response = await tracking.get(f"/api/v1/runs/{run['id']}", headers=auth)
    assert response.json()["body"]["in_progress"] is False


async def test_a_top_level_run_has_no_root_run_id(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    # The reference sets it on child runs only; the client refuses to resume a run that
    # has one ("resume the parent run instead").
    run = await create_run(tracking, auth, default_project)
    assert run["body"]["root_run_id"] is None
    listed = await tracking.get("/api/v1/runs", headers=auth)
    assert [r["body"]["root_run_id"] for r in listed.json()["items"]] == [None]


async def test_run_reaching_a_finished_status_ends_and_resuming_reopens_it(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    path = f"/api/v1/runs/{run['id']}"
    body = {"status": "failed", "status_reason": "out of memory", "add_tags": ["ignored"]}
    failed = await tracking.put(path, json=body, headers=auth)
    assert failed.status_code == 200, failed.text
    assert failed.json()["body"]["status"] == "failed"
    assert failed.json()["body"]["in_progress"] is False
    assert failed.json()["body"]["status_reason"] == "out of memory"
    ended = failed.json()["metadata"]["end_time"]
    assert ended is not None
    # The same finished status again keeps the first end: the leeway counts from there.
    again = await tracking.put(path, json={"status": "failed"}, headers=auth)
    assert again.json()["metadata"]["end_time"] == ended
    resumed = await tracking.put(path, json={"status": "resuming"}, headers=auth)
    assert resumed.json()["body"]["in_progress"] is True
    assert resumed.json()["metadata"]["end_time"] is None
    assert (await tracking.get(path, headers=auth)).json() == resumed.json()


async def test_a_finished_run_keeps_its_status_but_a_failed_one_resumes(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project, status="completed")
    path = f"/api/v1/runs/{run['id']}"
    for status in ("running", "failed", "stopped"):
        refused = await tracking.put(path, json={"status": status}, headers=auth)
        assert refused.status_code == 403, refused.text
        assert refused.json()["detail"] == [
            "IllegalOperationError",
            "Cannot update the status of a finished run.",
        ]
    resumed = await tracking.put(path, json={"status": "resuming"}, headers=auth)
    assert resumed.status_code == 403
    assert resumed.json()["detail"][1] == "Only failed or paused runs can be resumed."
    assert (await tracking.get(path, headers=auth)).json()["body"]["status"] == "completed"
    failed = await create_run(tracking, auth, default_project, "failed", status="failed")
    failed_path = f"/api/v1/runs/{failed['id']}"
    stopped = await tracking.put(failed_path, json={"status": "stopped"}, headers=auth)
    assert stopped.status_code == 403
    assert (await tracking.put(failed_path, json={"status": "resuming"}, headers=auth)).is_success


async def test_only_a_paused_or_failed_run_resumes(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    path = f"/api/v1/runs/{run['id']}"
    refused = await tracking.put(path, json={"status": "resuming"}, headers=auth)
    assert refused.status_code == 403
    assert refused.json()["detail"][1] == "Only failed or paused runs can be resumed."
    assert (await tracking.put(path, json={"status": "paused"}, headers=auth)).is_success
    resumed = await tracking.put(path, json={"status": "resuming"}, headers=auth)
    assert resumed.json()["body"]["status"] == "resuming"


async def test_updating_an_unknown_run_is_404_and_a_bad_status_422(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    missing = await tracking.put(
        f"/api/v1/runs/{uuid.uuid4()}", json={"status": "completed"}, headers=auth
    )
    assert missing.status_code == 404
    run = await create_run(tracking, auth, default_project)
    bad = await tracking.put(f"/api/v1/runs/{run['id']}", json={"status": "done"}, headers=auth)
    assert bad.status_code == 422


async def test_runs_list_filters_by_status(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    await create_run(tracking, auth, default_project, "a", status="running")
    await create_run(tracking, auth, default_project, "b", status="failed")
    response = await tracking.get("/api/v1/runs", params={"status": "failed"}, headers=auth)
    assert [r["name"] for r in response.json()["items"]] == ["b"]


async def test_step_links_input_and_output_versions(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    data = await create_version(tracking, auth, default_project, "data")
    model = await create_version(tracking, auth, default_project, "model")
    run = await create_run(tracking, auth, default_project)
    step = await create_step(
        tracking,
        auth,
        default_project,
        run,
        inputs={"dataset": [data["id"]]},
        outputs={"output": [model["id"]]},
    )
    resources = step["resources"]
    assert [v["id"] for v in resources["inputs"]["dataset"]] == [data["id"]]
    assert [v["id"] for v in resources["outputs"]["output"]] == [model["id"]]
    assert step["metadata"]["pipeline_run_id"] == run["id"]
    produced = (await tracking.get(f"{VERSIONS}/{model['id']}", headers=auth)).json()
    assert produced["resources"]["producer_step_run_id"] == step["id"]
    assert produced["resources"]["producer_pipeline_run_id"] == run["id"]
    fetched = await tracking.get(f"/api/v1/steps/{step['id']}", headers=auth)
    assert fetched.json() == step


async def test_step_with_an_unknown_version_is_404_and_not_created(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    body = {
        "project": default_project["id"],
        "name": "s",
        "start_time": "2026-11-22T10:00:00",
        "status": "completed",
        "pipeline_run_id": run["id"],
        "inputs": {"x": [str(uuid.uuid4())]},
    }
    response = await tracking.post("/api/v1/steps", json=body, headers=auth)
    assert response.status_code == 404
    retry = await tracking.post("/api/v1/steps", json={**body, "inputs": {}}, headers=auth)
    assert retry.status_code == 200


async def test_step_of_an_unknown_run_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    body = {
        "project": default_project["id"],
        "name": "s",
        "start_time": "2026-11-22T10:00:00",
        "status": "completed",
        "pipeline_run_id": str(uuid.uuid4()),
    }
    assert (await tracking.post("/api/v1/steps", json=body, headers=auth)).status_code == 404


async def test_two_steps_of_one_name_in_a_run_is_409(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    await create_step(tracking, auth, default_project, run, "same")
    body = {
        "project": default_project["id"],
        "name": "same",
        "start_time": "2026-11-22T10:00:00",
        "status": "completed",
        "pipeline_run_id": run["id"],
    }
    assert (await tracking.post("/api/v1/steps", json=body, headers=auth)).status_code == 409


async def test_deleting_the_run_frees_its_versions(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project)
    run = await create_run(tracking, auth, default_project)
    step = await create_step(tracking, auth, default_project, run, outputs={"o": [version["id"]]})
    assert (await tracking.delete(f"{VERSIONS}/{version['id']}", headers=auth)).status_code == 400
    assert (await tracking.delete(f"/api/v1/runs/{run['id']}", headers=auth)).status_code == 200
    assert (await tracking.get(f"/api/v1/steps/{step['id']}", headers=auth)).status_code == 404
    assert (await tracking.delete(f"{VERSIONS}/{version['id']}", headers=auth)).status_code == 200


async def test_pipelines_are_created_listed_and_unique_per_project(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    await create_pipeline(tracking, auth, default_project, "etl")
    clash = await tracking.post(
        "/api/v1/pipelines", json={"project": default_project["id"], "name": "etl"}, headers=auth
    )
    assert clash.status_code == 409
    listed = await tracking.get("/api/v1/pipelines", params={"name": "etl"}, headers=auth)
    assert [p["name"] for p in listed.json()["items"]] == ["etl"]


async def test_snapshot_needs_a_pipeline_of_its_project(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    other = await new_project(tracking, auth, "other")
    pipeline = await create_pipeline(tracking, auth, other, "elsewhere")
    body = {
        "project": default_project["id"],
        "run_name_template": "r",
        "stack": str(uuid.uuid4()),
        "pipeline": pipeline["id"],
    }
    response = await tracking.post("/api/v1/pipeline_snapshots", json=body, headers=auth)
    assert response.status_code == 404
