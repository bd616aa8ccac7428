"""A pipeline run as the zenml client records it: the run it announces is taken by the
orchestrator, steps are created and finished, the run follows them, and a second run
finds the first one's steps by cache key."""

from __future__ import annotations

import uuid

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import Json, create_version
from tests.tracking.step_run.support import post_run, post_step, put, two_step_snapshot

CACHED = {"status": "completed", "cache_expired": "False", "sort_by": "desc:created", "size": "1"}


async def run_both_steps(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, snapshot: Json
) -> tuple[Json, Json, Json]:
    """The local orchestrator's calls for one run: take the announced run, then each step
    created running and finished with its output."""
    announced, _ = await post_run(tracking, auth, snapshot)
    run, taken = await post_run(
        tracking,
        auth,
        snapshot,
        name=f"other-{uuid.uuid4().hex[:6]}",
        status="running",
        orchestrator_run_id=uuid.uuid4().hex,
        orchestrator_environment={"os": "linux", "python_packages": "zenml==0.96.3"},
    )
    assert (run["id"], taken) == (announced["id"], True)
    steps = []
    for name, key in (("make_number", "key-make"), ("double", "key-double")):
        step = await post_step(tracking, auth, run, name, cache_key=key)
        output = await create_version(tracking, auth, project, f"{name}-{uuid.uuid4().hex[:6]}")
        body = {"outputs": {"output": [output["id"]]}, "status": "completed"}
        steps.append(await put(tracking, auth, f"/api/v1/steps/{step['id']}", body))
    return run, steps[0], steps[1]


async def test_the_orchestrator_takes_the_announced_run_and_the_run_follows_its_steps(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await two_step_snapshot(tracking, auth, default_project)
    run, make, double = await run_both_steps(tracking, auth, default_project, snapshot)
    got = (await tracking.get(f"/api/v1/runs/{run['id']}", headers=auth)).json()
    assert got["body"]["status"] == "completed"
    assert got["body"]["in_progress"] is False
    assert got["metadata"]["end_time"] is not None
    assert got["metadata"]["orchestrator_environment"] == {"os": "linux"}
    assert got["metadata"]["client_environment"] == {"os": "linux"}
    assert got["metadata"]["config"]["substitutions"] == {
        "date": "2026_11_26",
        "time": "11_20_25_184481",
    }
    assert got["resources"]["stack"]["name"] == "default"
    # The client's closing "provisioning" does not reopen a run the orchestrator ran.
    after = await put(tracking, auth, f"/api/v1/runs/{run['id']}", {"status": "provisioning"})
    assert after["body"]["status"] == "completed"
    # A step's configuration and spec are its snapshot's; its parents come from the spec.
    assert double["metadata"]["config"]["name"] == "double"
    assert double["metadata"]["spec"]["upstream_steps"] == ["make_number"]
    assert double["metadata"]["parent_step_ids"] == [make["id"]]
    assert double["body"]["substitutions"]["time"] == "11_20_25_184481"
    assert double["body"]["end_time"] is not None
    (output,) = double["resources"]["outputs"]["output"]
    assert output["resources"] is None  # nested versions are body-only


async def test_a_run_stays_running_while_a_step_is_missing(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await two_step_snapshot(tracking, auth, default_project)
    run, _ = await post_run(tracking, auth, snapshot, status="running")
    step = await post_step(tracking, auth, run, "make_number")
    await put(tracking, auth, f"/api/v1/steps/{step['id']}", {"status": "completed"})
    got = (await tracking.get(f"/api/v1/runs/{run['id']}", headers=auth)).json()
    assert got["body"]["status"] == "running"
    failed = await post_step(tracking, auth, run, "double", status="failed")
    assert failed["body"]["status"] == "failed"
    got = (await tracking.get(f"/api/v1/runs/{run['id']}", headers=auth)).json()
    assert got["body"]["status"] == "failed"


async def test_a_second_run_finds_the_first_runs_step_by_cache_key_and_completes_cached(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await two_step_snapshot(tracking, auth, default_project)
    params = {**CACHED, "cache_key": "key-make", "hydrate": "true"}
    empty = await tracking.get("/api/v1/steps", params=params, headers=auth)
    assert empty.json()["items"] == []
    _, make, double = await run_both_steps(tracking, auth, default_project, snapshot)
    found = (await tracking.get("/api/v1/steps", params=params, headers=auth)).json()
    assert [s["id"] for s in found["items"]] == [make["id"]]
    assert found["items"][0]["metadata"]["cache_key"] == "key-make"

    second, _ = await post_run(tracking, auth, snapshot)
    for original in (make, double):
        outputs = {"output": [original["resources"]["outputs"]["output"][0]["id"]]}
        cached = await post_step(
            tracking,
            auth,
            second,
            original["name"],
            status="cached",
            cache_key=original["metadata"]["cache_key"],
            original_step_run_id=original["id"],
            outputs=outputs,
        )
        assert cached["metadata"]["original_step_run_id"] == original["id"]
    got = (await tracking.get(f"/api/v1/runs/{second['id']}", headers=auth)).json()
    assert got["body"]["status"] == "completed"
    listed = await tracking.get(
        "/api/v1/steps", params={"pipeline_run_id": second["id"]}, headers=auth
    )
    assert [s["body"]["status"] for s in listed.json()["items"]] == ["cached", "cached"]
    # A cache that expired is not offered again.
    await put(
        tracking,
        auth,
        f"/api/v1/steps/{make['id']}",
        {"cache_expires_at": "2000-01-01T00:00:00"},
    )
    again = (await tracking.get("/api/v1/steps", params=params, headers=auth)).json()
    assert again["items"] == []


async def test_steps_answer_404_for_unknown_ids_and_422_for_bad_filters(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    missing = await tracking.put(
        f"/api/v1/steps/{uuid.uuid4()}", json={"status": "completed"}, headers=auth
    )
    assert missing.status_code == 404
    assert missing.json()["detail"][0] == "KeyError"
    snapshot = await two_step_snapshot(tracking, auth, default_project)
    run, _ = await post_run(tracking, auth, snapshot, status="running")
    unknown_original = await tracking.post(
        "/api/v1/steps",
        json={
            "project": default_project["id"],
            "name": "make_number",
            "start_time": "2026-11-26T11:20:26",
            "status": "cached",
            "pipeline_run_id": run["id"],
            "original_step_run_id": str(uuid.uuid4()),
        },
        headers=auth,
    )
    assert unknown_original.status_code == 404
    bad = await tracking.get("/api/v1/steps", params={"cache_expired": "soon"}, headers=auth)
    assert bad.status_code == 422
