"""What the step page and a running step ask of a step beyond the step itself: its status
and configuration, and its heartbeat, which tells the step its run's status."""

from __future__ import annotations

import uuid

import httpx

from tests.identity.conftest import bearer
from tests.tracking.artifact.support import Headers
from tests.tracking.pipeline_run.reference_shapes import check_shape
from tests.tracking.step_run.support import (
    Json,
    post_run,
    post_step,
    put,
    step_configuration,
    two_step_snapshot,
)
from tests.tracking.workload_scope import support
from tests.tracking.workload_scope.support import workload_token

identity = support.identity


async def running_step(
    tracking: httpx.AsyncClient, auth: Headers, project: Json
) -> tuple[Json, Json]:
    snapshot = await two_step_snapshot(tracking, auth, project)
    run, _ = await post_run(
        tracking, auth, snapshot, status="running", orchestrator_run_id=uuid.uuid4().hex
    )
    return run, await post_step(tracking, auth, run, "make_number")


async def test_a_steps_status_and_configuration_are_answered_alone(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    _, step = await running_step(tracking, auth, default_project)
    status = await tracking.get(f"/api/v1/steps/{step['id']}/status", headers=auth)
    assert (status.status_code, status.json()) == (200, "running")
    config = await tracking.get(f"/api/v1/steps/{step['id']}/step-configuration", headers=auth)
    assert config.status_code == 200
    expected = step_configuration("make_number", [])["config"]
    assert config.json() == {
        **expected,
        "substitutions": {"date": "2026_11_26", "time": "11_20_25_184481"},
    }
    for path in ("status", "step-configuration"):
        missing = await tracking.get(f"/api/v1/steps/{uuid.uuid4()}/{path}", headers=auth)
        assert missing.status_code == 404


async def test_a_heartbeat_is_recorded_and_answers_the_runs_status(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run, step = await running_step(tracking, auth, default_project)
    beat = await tracking.put(f"/api/v1/steps/{step['id']}/heartbeat", headers=auth)
    assert beat.status_code == 200, beat.text
    check_shape("StepHeartbeatResponse", beat.json())
    assert beat.json()["status"] == "running"
    assert beat.json()["pipeline_run_status"] == "running"
    assert beat.json()["heartbeat_enabled"] is False
    got = await tracking.get(f"/api/v1/steps/{step['id']}", headers=auth)
    assert got.json()["body"]["latest_heartbeat"] + "Z" == beat.json()["latest_heartbeat"]
    assert (await tracking.post(f"/api/v1/runs/{run['id']}/stop", headers=auth)).status_code == 200
    stopping = await tracking.put(f"/api/v1/steps/{step['id']}/heartbeat", headers=auth)
    assert stopping.json()["pipeline_run_status"] == "stopping"


async def test_a_finished_step_has_no_heartbeat(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    _, step = await running_step(tracking, auth, default_project)
    await put(tracking, auth, f"/api/v1/steps/{step['id']}", {"status": "completed"})
    refused = await tracking.put(f"/api/v1/steps/{step['id']}/heartbeat", headers=auth)
    assert refused.status_code == 403
    assert refused.json()["detail"][1] == "Can not update heartbeat for finished steps."
    missing = await tracking.put(f"/api/v1/steps/{uuid.uuid4()}/heartbeat", headers=auth)
    assert missing.status_code == 404


async def test_a_runs_workload_token_beats_only_its_own_steps_hearts(
    tracking: httpx.AsyncClient,
    identity: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
) -> None:
    run, step = await running_step(tracking, auth, default_project)
    _, other = await running_step(tracking, auth, default_project)
    token = bearer(await workload_token(identity, auth, pipeline_run_id=run["id"]))
    own = await tracking.put(f"/api/v1/steps/{step['id']}/heartbeat", headers=token)
    assert own.status_code == 200, own.text
    foreign = await tracking.put(f"/api/v1/steps/{other['id']}/heartbeat", headers=token)
    assert foreign.status_code == 401
