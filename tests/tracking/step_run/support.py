"""A two-step pipeline's snapshot as the zenml client sends it (``make_number`` feeding
``double``), its runs announced and taken as the client and the local orchestrator do."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.pipeline_run.support import create_pipeline, default_stack_id

Json = dict[str, Any]
STEPS = ("make_number", "double")


def step_configuration(name: str, upstream: list[str]) -> Json:
    source = {"module": "pipe", "attribute": name, "type": "user"}
    spec = {"source": source, "upstream_steps": upstream, "inputs": {}, "invocation_id": name}
    config: Json = {
        "name": name,
        "parameters": {},
        "substitutions": {},
        "enable_cache": None,
        # The client's default (minutes), sent with every step's configuration.
        "heartbeat_healthy_threshold": 30,
    }
    return {"spec": spec, "config": config}


async def two_step_snapshot(
    tracking: httpx.AsyncClient,
    auth: Headers,
    project: Json,
    tags: list[Any] | None = None,
    **configured: Any,
) -> Json:
    """``tags``: the pipeline configuration's (``@pipeline(tags=...)``); ``configured``,
    more of it (``enable_heartbeat=``: the steps' specs say the same, as the client's
    compiler makes them)."""
    pipeline = await create_pipeline(tracking, auth, project, f"compat-{uuid.uuid4().hex[:6]}")
    configuration = {"name": pipeline["name"], "substitutions": {}, "tags": tags, **configured}
    steps = {
        "make_number": step_configuration("make_number", []),
        "double": step_configuration("double", ["make_number"]),
    }
    if "enable_heartbeat" in configured:
        for step in steps.values():
            step["spec"]["enable_heartbeat"] = bool(configured["enable_heartbeat"])
    body = {
        "project": project["id"],
        "run_name_template": "compat-{date}-{time}",
        "pipeline_configuration": configuration,
        "step_configurations": steps,
        "pipeline_spec": {"version": "0.5", "steps": []},
        "client_environment": {"os": "linux", "python_packages": "zenml==0.96.3"},
        "client_version": "0.96.3",
        "server_version": "0.96.3",
        "pipeline_version_hash": "80488dcac968263e317c9543fbe7fa1d",
        "source_code": "@pipeline\ndef compat(): ...\n",
        "stack": await default_stack_id(tracking, auth),
        "pipeline": pipeline["id"],
    }
    response = await tracking.post("/api/v1/pipeline_snapshots", json=body, headers=auth)
    assert response.status_code == 200, response.text
    snapshot: Json = response.json()
    return snapshot


async def post_run(
    tracking: httpx.AsyncClient, auth: Headers, snapshot: Json, **fields: Any
) -> tuple[Json, bool]:
    body = {
        "project": snapshot["body"]["project_id"],
        "name": f"compat-{uuid.uuid4().hex[:8]}",
        "snapshot": snapshot["id"],
        "status": "initializing",
        "start_time": "2026-11-26T11:20:25.184481",
        **fields,
    }
    response = await tracking.post("/api/v1/runs", json=body, headers=auth)
    assert response.status_code == 200, response.text
    run, created = response.json()
    return run, created


async def post_step(
    tracking: httpx.AsyncClient, auth: Headers, run: Json, name: str, **fields: Any
) -> Json:
    body = {
        "project": run["body"]["project_id"],
        "name": name,
        "start_time": "2026-11-26T11:20:26",
        "status": "running",
        "pipeline_run_id": run["id"],
        **fields,
    }
    response = await tracking.post("/api/v1/steps", json=body, headers=auth)
    assert response.status_code == 200, response.text
    step: Json = response.json()
    return step


async def put(tracking: httpx.AsyncClient, auth: Headers, path: str, body: Json) -> Json:
    response = await tracking.put(path, json=body, headers=auth)
    assert response.status_code == 200, response.text
    updated: Json = response.json()
    return updated
