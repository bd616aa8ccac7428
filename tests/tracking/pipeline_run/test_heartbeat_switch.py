"""``PUT /runs/{id}/disable_heartbeat``: the reference's per-run heartbeat switch. A run
starts with its snapshot's ``enable_heartbeat`` (unset: on); switched off, the run says
``enable_heartbeat: false`` and its steps' heartbeats answer ``heartbeat_enabled: false``.
A step's ``heartbeat_threshold`` is its configuration's ``heartbeat_healthy_threshold``
while its heartbeats are watched, else null."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.identity.conftest import bearer
from tests.tracking.artifact.support import Headers
from tests.tracking.step_run.support import Json, post_run, post_step, two_step_snapshot
from tests.tracking.workload_scope import support
from tests.tracking.workload_scope.support import workload_token

identity = support.identity


async def heartbeat_run(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, **configured: Any
) -> tuple[Json, Json]:
    snapshot = await two_step_snapshot(tracking, auth, project, **configured)
    run, _ = await post_run(
        tracking, auth, snapshot, status="running", orchestrator_run_id=uuid.uuid4().hex
    )
    return run, await post_step(tracking, auth, run, "make_number")


def switch(run: Json) -> str:
    return f"/api/v1/runs/{run['id']}/disable_heartbeat"


async def test_a_run_starts_with_its_snapshots_heartbeat_setting(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    unset, _ = await heartbeat_run(tracking, auth, default_project)
    off, off_step = await heartbeat_run(tracking, auth, default_project, enable_heartbeat=False)
    _, on_step = await heartbeat_run(tracking, auth, default_project, enable_heartbeat=True)
    assert unset["metadata"]["enable_heartbeat"] is True
    assert off["metadata"]["enable_heartbeat"] is False
    assert (on_step["body"]["heartbeat_threshold"], off_step["body"]["heartbeat_threshold"]) == (
        30,
        None,
    )
    beat = f"/api/v1/steps/{off_step['id']}/heartbeat"
    assert (await tracking.put(beat, headers=auth)).json()["heartbeat_enabled"] is False


async def test_disabling_a_runs_heartbeat_turns_its_steps_heartbeats_off(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run, step = await heartbeat_run(tracking, auth, default_project, enable_heartbeat=True)
    beat = f"/api/v1/steps/{step['id']}/heartbeat"
    assert (await tracking.put(beat, headers=auth)).json()["heartbeat_enabled"] is True
    switched = await tracking.put(switch(run), headers=auth)
    assert (switched.status_code, switched.json()) == (200, None)
    read = await tracking.get(f"/api/v1/runs/{run['id']}", headers=auth)
    assert read.json()["metadata"]["enable_heartbeat"] is False
    assert read.json()["body"]["updated"] == run["body"]["updated"]
    assert (await tracking.put(beat, headers=auth)).json()["heartbeat_enabled"] is False
    for path in (f"/api/v1/steps/{step['id']}", f"/api/v1/runs/{run['id']}/steps"):
        answer = (await tracking.get(path, headers=auth)).json()
        bodies = (
            [item["body"] for item in answer["items"]] if "items" in answer else [answer["body"]]
        )
        assert [body["heartbeat_threshold"] for body in bodies] == [None]
    # Switching it off again is no error.
    assert (await tracking.put(switch(run), headers=auth)).status_code == 200


async def test_an_unknown_or_malformed_run_is_refused(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    missing = await tracking.put(f"/api/v1/runs/{uuid.uuid4()}/disable_heartbeat", headers=auth)
    assert missing.status_code == 404
    assert missing.json()["detail"][0] == "KeyError"
    malformed = await tracking.put("/api/v1/runs/not-a-run/disable_heartbeat", headers=auth)
    assert malformed.status_code == 422
    anonymous = await tracking.put(f"/api/v1/runs/{uuid.uuid4()}/disable_heartbeat")
    assert anonymous.status_code == 401


async def test_a_workload_token_switches_only_its_own_run(
    tracking: httpx.AsyncClient,
    identity: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
) -> None:
    run, _ = await heartbeat_run(tracking, auth, default_project)
    other, _ = await heartbeat_run(tracking, auth, default_project)
    token = bearer(await workload_token(identity, auth, pipeline_run_id=run["id"]))
    assert (await tracking.put(switch(run), headers=token)).status_code == 200
    foreign = await tracking.put(switch(other), headers=token)
    assert foreign.status_code == 401
    read = await tracking.get(f"/api/v1/runs/{other['id']}", headers=auth)
    assert read.json()["metadata"]["enable_heartbeat"] is True
