"""``/hook_invocations``: recorded as the client sends them (its id, the run and step, the
outputs and logs), listed with the reference's filters; unknown references are 404s."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import create_version, default_store
from tests.tracking.pipeline_run.support import create_run, create_step

Json = dict[str, Any]
HOOKS = "/api/v1/hook_invocations"


def hook_body(in_project: Json, run: Json, **extra: Any) -> Json:
    return {
        "project": in_project["id"],
        "hook_type": "run_start",
        "status": "completed",
        "start_time": "2026-11-22T10:00:00",
        "pipeline_run_id": run["id"],
        **extra,
    }


async def create_hook(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, run: Json, **extra: Any
) -> Json:
    response = await tracking.post(HOOKS, json=hook_body(project, run, **extra), headers=auth)
    assert response.status_code == 200, response.text
    created: Json = response.json()
    return created


async def test_create_keeps_what_the_client_sent(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    step = await create_step(tracking, auth, default_project, run)
    version = await create_version(tracking, auth, default_project)
    store_id, _ = await default_store(tracking, auth)
    logs = await tracking.post(
        "/api/v1/logs",
        json={
            "project": default_project["id"],
            "uri": "/logs/hook.log",
            "source": "hook",
            "artifact_store_id": store_id,
        },
        headers=auth,
    )
    assert logs.status_code == 200, logs.text
    invocation_id = str(uuid.uuid4())
    hook = await create_hook(
        tracking,
        auth,
        default_project,
        run,
        id=invocation_id,
        hook_type="step_failure",
        status="failed",
        name="alert",
        end_time="2026-11-22T10:00:05",
        source="hooks.alert",
        step_run_id=step["id"],
        outputs={"report": [version["id"]]},
        exception_info={"traceback": "Traceback ...", "message": "boom"},
        logs_id=logs.json()["id"],
    )
    assert (hook["id"], hook["name"]) == (invocation_id, "alert")
    assert list(hook) == ["body", "metadata", "resources", "id", "permission_denied", "name"]
    body = hook["body"]
    assert (body["hook_type"], body["status"], body["step_run_id"]) == (
        "step_failure",
        "failed",
        step["id"],
    )
    assert (body["start_time"], body["end_time"]) == ("2026-11-22T10:00:00", "2026-11-22T10:00:05")
    assert hook["metadata"] == {
        "source": "hooks.alert",
        "exception_info": {
            "traceback": "Traceback ...",
            "source": None,
            "message": "boom",
            "user_code_line": None,
        },
    }
    (output,) = hook["resources"]["outputs"]["report"]
    assert (output["id"], output["resources"]) == (version["id"], None)
    assert [log["id"] for log in hook["resources"]["log_collection"]] == [logs.json()["id"]]
    got = await tracking.get(f"{HOOKS}/{invocation_id}", headers=auth)
    assert got.json() == hook
    again = await tracking.post(
        HOOKS, json=hook_body(default_project, run, id=invocation_id), headers=auth
    )
    assert again.status_code == 409


async def test_list_filters(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    other = await create_run(tracking, auth, default_project)
    start = await create_hook(tracking, auth, default_project, run)
    failure = await create_hook(
        tracking, auth, default_project, other, hook_type="run_failure", status="failed"
    )

    async def ids(*params: tuple[str, str]) -> list[str]:
        response = await tracking.get(HOOKS, params=list(params), headers=auth)
        assert response.status_code == 200, response.text
        return [item["id"] for item in response.json()["items"]]

    assert await ids() == [start["id"], failure["id"]]
    assert await ids(("pipeline_run_id", other["id"])) == [failure["id"]]
    assert await ids(("hook_type", "run_start")) == [start["id"]]
    assert await ids(("status", 'oneof:["failed"]')) == [failure["id"]]
    assert await ids(("start_time", "gte:2026-11-22 10:00:00"), ("sort_by", "desc:created")) == [
        failure["id"],
        start["id"],
    ]
    assert await ids(("step_run_id", "isnotnull:")) == []
    assert (
        await tracking.get(HOOKS, params={"start_time": "soon"}, headers=auth)
    ).status_code == 422


async def test_delete(tracking: httpx.AsyncClient, auth: Headers, default_project: Json) -> None:
    run = await create_run(tracking, auth, default_project)
    hook = await create_hook(tracking, auth, default_project, run)
    one = f"{HOOKS}/{hook['id']}"
    assert (await tracking.delete(one, headers=auth)).json() is None
    assert (await tracking.get(one, headers=auth)).status_code == 404
    assert (await tracking.delete(one, headers=auth)).status_code == 404


async def test_unknown_references_are_404_and_bad_bodies_422(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    nowhere = str(uuid.uuid4())
    for extra in (
        {"pipeline_run_id": nowhere},
        {"step_run_id": nowhere},
        {"outputs": {"x": [nowhere]}},
        {"project": nowhere},
    ):
        response = await tracking.post(
            HOOKS, json=hook_body(default_project, run, **extra), headers=auth
        )
        assert response.status_code == 404, extra
        assert response.json()["detail"][0] == "KeyError"
    for extra in ({"hook_type": "teatime"}, {"status": "asleep"}, {"start_time": "later"}):
        response = await tracking.post(
            HOOKS, json=hook_body(default_project, run, **extra), headers=auth
        )
        assert response.status_code == 422, extra
    listed = await tracking.get(HOOKS, headers=auth)
    assert listed.json()["total"] == 0
