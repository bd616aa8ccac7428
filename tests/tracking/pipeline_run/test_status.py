"""A run's status: what only steps may have is refused."""

from __future__ import annotations

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import Json
from tests.tracking.pipeline_run.support import create_run, create_snapshot


async def test_a_status_only_steps_have_is_refused_for_a_run_with_403(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    path = f"/api/v1/runs/{run['id']}"
    for status in ("cached", "skipped", "retrying", "retried"):
        refused = await tracking.put(path, json={"status": status}, headers=auth)
        assert refused.status_code == 403, refused.text
        assert refused.json()["detail"] == [
            "IllegalOperationError",
            f"Execution status `{status}` is not valid for pipeline runs.",
        ]
    assert (await tracking.get(path, headers=auth)).json()["body"]["status"] == "running"


async def test_a_dynamic_run_stopping_that_fails_is_stopped(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    # The reference keeps a stopped dynamic run stopped (its steps' failure is the stop).
    snapshot = await create_snapshot(tracking, auth, default_project, is_dynamic=True)
    body = {
        "project": default_project["id"],
        "name": "dynamic-run",
        "snapshot": snapshot["id"],
        "status": "stopping",
    }
    created = await tracking.post("/api/v1/runs", json=body, headers=auth)
    path = f"/api/v1/runs/{created.json()[0]['id']}"
    failed = await tracking.put(path, json={"status": "failed"}, headers=auth)
    assert failed.status_code == 200, failed.text
    assert failed.json()["body"]["status"] == "stopped"
    again = await tracking.put(path, json={"status": "failed"}, headers=auth)
    assert again.json()["body"]["status"] == "stopped"
