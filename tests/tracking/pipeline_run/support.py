"""Making the pipelines, snapshots, runs and steps that artifact versions and deployments
refer to, through the API."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers

Json = dict[str, Any]


async def _post(tracking: httpx.AsyncClient, auth: Headers, path: str, body: Json) -> Any:
    response = await tracking.post(path, json=body, headers=auth)
    assert response.status_code == 200, response.text
    return response.json()


async def default_stack_id(tracking: httpx.AsyncClient, auth: Headers) -> str:
    response = await tracking.get("/api/v1/stacks", params={"name": "default"}, headers=auth)
    stack_id: str = response.json()["items"][0]["id"]
    return stack_id


async def create_pipeline(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, name: str = "training"
) -> Json:
    body = {"project": project["id"], "name": name}
    created: Json = await _post(tracking, auth, "/api/v1/pipelines", body)
    return created


async def create_snapshot(
    tracking: httpx.AsyncClient,
    auth: Headers,
    project: Json,
    pipeline: Json | None = None,
    run_name_template: str = "run-{date}",
    **extra: Any,
) -> Json:
    pipeline = pipeline or await create_pipeline(tracking, auth, project, uuid.uuid4().hex[:8])
    body = {
        "project": project["id"],
        "run_name_template": run_name_template,
        "pipeline_configuration": {"name": pipeline["name"]},
        "stack": await default_stack_id(tracking, auth),
        "pipeline": pipeline["id"],
        **extra,
    }
    created: Json = await _post(tracking, auth, "/api/v1/pipeline_snapshots", body)
    return created


async def create_run(
    tracking: httpx.AsyncClient,
    auth: Headers,
    project: Json,
    name: str | None = None,
    status: str = "running",
    tags: list[Any] | None = None,
    pipeline: Json | None = None,
) -> Json:
    """A run of a new snapshot of ``pipeline`` (of a new pipeline if none)."""
    snapshot = await create_snapshot(tracking, auth, project, pipeline)
    body = {
        "project": project["id"],
        "name": name or f"run-{uuid.uuid4().hex[:8]}",
        "snapshot": snapshot["id"],
        "status": status,
        "tags": tags,
    }
    run, created = await _post(tracking, auth, "/api/v1/runs", body)
    assert created is True
    return run  # type: ignore[no-any-return]


async def create_step(
    tracking: httpx.AsyncClient,
    auth: Headers,
    project: Json,
    run: Json,
    name: str = "trainer",
    *,
    inputs: Json | None = None,
    outputs: Json | None = None,
) -> Json:
    body = {
        "project": project["id"],
        "name": name,
        "start_time": "2026-11-22T10:00:00",
        "status": "completed",
        "pipeline_run_id": run["id"],
        "inputs": inputs or {},
        "outputs": outputs or {},
    }
    created: Json = await _post(tracking, auth, "/api/v1/steps", body)
    return created


async def run_of_snapshot(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, snapshot: Json, expected: int = 200
) -> httpx.Response:
    """``POST /runs`` of a new running run of ``snapshot``, answered ``expected``."""
    body = {
        "project": project["id"],
        "name": f"run-{uuid.uuid4().hex[:8]}",
        "snapshot": snapshot["id"],
        "status": "running",
    }
    response = await tracking.post("/api/v1/runs", json=body, headers=auth)
    assert response.status_code == expected, response.text
    return response
