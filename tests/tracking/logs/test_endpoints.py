"""``/logs``: the client records where it wrote logs, then attaches them to its run or
step; runs and steps list them in ``log_collection``."""

from __future__ import annotations

import uuid

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import Json, default_store
from tests.tracking.step_run.support import post_run, post_step, put, two_step_snapshot


def logs_body(project: Json, store_id: str, **fields: object) -> Json:
    logs_id = str(uuid.uuid4())
    return {
        "project": project["id"],
        "id": logs_id,
        "uri": f"/tmp/stores/logs/{logs_id}.log",
        "source": "client",
        "artifact_store_id": store_id,
        **fields,
    }


async def test_logs_are_created_then_attached_to_a_run_which_lists_them(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    store_id, _ = await default_store(tracking, auth)
    body = logs_body(default_project, store_id)
    created = await tracking.post("/api/v1/logs", json=body, headers=auth)
    assert created.status_code == 200, created.text
    logs = created.json()
    assert logs["id"] == body["id"]
    assert logs["body"]["uri"] == body["uri"]
    assert logs["body"]["source"] == "client"
    assert logs["metadata"]["artifact_store_id"] == store_id
    assert logs["metadata"]["pipeline_run_id"] is None
    assert logs["resources"]["user"]["name"] == "default"
    assert "name" not in logs

    snapshot = await two_step_snapshot(tracking, auth, default_project)
    run, _ = await post_run(tracking, auth, snapshot)
    attached = await put(
        tracking, auth, f"/api/v1/logs/{logs['id']}", {"pipeline_run_id": run["id"]}
    )
    assert attached["metadata"]["pipeline_run_id"] == run["id"]
    got = (await tracking.get(f"/api/v1/runs/{run['id']}", headers=auth)).json()
    (listed,) = got["resources"]["log_collection"]
    assert (listed["id"], listed["metadata"], listed["resources"]) == (logs["id"], None, None)
    dehydrated = await tracking.get(
        f"/api/v1/logs/{logs['id']}", params={"hydrate": "false"}, headers=auth
    )
    assert dehydrated.json()["metadata"] is None


async def test_a_step_lists_the_logs_it_came_with_and_those_added_later(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    store_id, _ = await default_store(tracking, auth)
    prepared = logs_body(default_project, store_id, source="prepare_step")
    assert (await tracking.post("/api/v1/logs", json=prepared, headers=auth)).status_code == 200
    snapshot = await two_step_snapshot(tracking, auth, default_project)
    run, _ = await post_run(tracking, auth, snapshot, status="running")
    step = await post_step(tracking, auth, run, "make_number", logs=prepared["id"])
    assert [x["id"] for x in step["resources"]["log_collection"]] == [prepared["id"]]
    during = logs_body(default_project, store_id, source="step", step_run_id=step["id"])
    assert (await tracking.post("/api/v1/logs", json=during, headers=auth)).status_code == 200
    added = logs_body(default_project, store_id, source="step")
    updated = await put(tracking, auth, f"/api/v1/steps/{step['id']}", {"add_logs": [added]})
    sources = [x["body"]["source"] for x in updated["resources"]["log_collection"]]
    assert sources == ["prepare_step", "step", "step"]


async def test_bad_logs_are_refused_in_the_platform_shape(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    store_id, _ = await default_store(tracking, auth)
    no_store = logs_body(default_project, store_id, artifact_store_id=None)
    refused = await tracking.post("/api/v1/logs", json=no_store, headers=auth)
    assert refused.status_code == 422
    both = logs_body(
        default_project, store_id, pipeline_run_id=str(uuid.uuid4()), step_run_id=str(uuid.uuid4())
    )
    assert (await tracking.post("/api/v1/logs", json=both, headers=auth)).status_code == 422
    unknown_run = logs_body(default_project, store_id, pipeline_run_id=str(uuid.uuid4()))
    missing = await tracking.post("/api/v1/logs", json=unknown_run, headers=auth)
    assert missing.status_code == 404
    assert missing.json()["detail"][0] == "KeyError"
    unknown_store = logs_body(default_project, str(uuid.uuid4()))
    assert (
        await tracking.post("/api/v1/logs", json=unknown_store, headers=auth)
    ).status_code == 404
    body = logs_body(default_project, store_id)
    assert (await tracking.post("/api/v1/logs", json=body, headers=auth)).status_code == 200
    assert (await tracking.post("/api/v1/logs", json=body, headers=auth)).status_code == 409
    gone = await tracking.put(
        f"/api/v1/logs/{uuid.uuid4()}", json={"step_run_id": str(uuid.uuid4())}, headers=auth
    )
    assert gone.status_code == 404
    assert (await tracking.get(f"/api/v1/logs/{uuid.uuid4()}", headers=auth)).status_code == 404


async def test_a_steps_logs_are_read_from_the_artifact_store_they_were_written_to(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    store_id, root = await default_store(tracking, auth)
    snapshot = await two_step_snapshot(tracking, auth, default_project)
    run, _ = await post_run(tracking, auth, snapshot, status="running")
    step = await post_step(tracking, auth, run, "make_number")
    path = f"/api/v1/steps/{step['id']}/logs"
    assert (await tracking.get(path, params={"source": "step"}, headers=auth)).status_code == 404

    folder = root / "logs" / uuid.uuid4().hex
    folder.mkdir(parents=True)
    (folder / "a.log").write_text(
        '{"message": "doubling 3", "level": 20, "timestamp": "2026-11-26T11:20:28.8967Z"}\n'
        "\n[2026-11-26 11:20:29 UTC] plain text\n"
    )
    (folder / "b.log").write_text("last line without a newline")
    body = logs_body(default_project, store_id, source="step", step_run_id=step["id"])
    body["uri"] = str(folder)
    assert (await tracking.post("/api/v1/logs", json=body, headers=auth)).status_code == 200
    read = await tracking.get(path, params={"source": "step"}, headers=auth)
    assert read.status_code == 200, read.text
    entries = read.json()
    assert [(e["message"], e["level"]) for e in entries] == [
        ("doubling 3", 20),
        ("plain text", 20),
        ("last line without a newline", 20),
    ]
    assert entries[0]["timestamp"] == "2026-11-26T11:20:28.896700Z"
    assert entries[1]["timestamp"] == "2026-11-26T11:20:29Z"
    by_id = await tracking.get(path, params={"logs_id": body["id"]}, headers=auth)
    assert by_id.json()[0]["message"] == "doubling 3"

    neither = await tracking.get(path, headers=auth)
    both = await tracking.get(path, params={"source": "step", "logs_id": body["id"]}, headers=auth)
    assert (neither.status_code, both.status_code) == (400, 400)
    other = await tracking.get(path, params={"source": "prepare_step"}, headers=auth)
    assert other.status_code == 404
    assert other.json()["detail"] == [
        "KeyError",
        f"No logs found for source 'prepare_step' in step {step['id']}",
    ]
    outside = logs_body(default_project, store_id, source="outside", step_run_id=step["id"])
    outside["uri"] = "/etc/passwd"
    assert (await tracking.post("/api/v1/logs", json=outside, headers=auth)).status_code == 200
    refused = await tracking.get(path, params={"source": "outside"}, headers=auth)
    assert refused.status_code == 403
    in_log_store = logs_body(
        default_project, store_id, source="otel", step_run_id=step["id"], artifact_store_id=None
    )
    in_log_store["log_store_id"] = store_id
    assert (await tracking.post("/api/v1/logs", json=in_log_store, headers=auth)).status_code == 200
    unread = await tracking.get(path, params={"source": "otel"}, headers=auth)
    assert unread.status_code == 501


async def test_logs_in_a_local_store_outside_the_allowed_roots_are_refused(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    created = await tracking.post(
        "/api/v1/components",
        json={
            "name": "root",
            "type": "artifact_store",
            "flavor": "local",
            "configuration": {"path": "/"},
        },
        headers=auth,
    )
    assert created.status_code == 200, created.text
    snapshot = await two_step_snapshot(tracking, auth, default_project)
    run, _ = await post_run(tracking, auth, snapshot, status="running")
    step = await post_step(tracking, auth, run, "make_number")
    body = logs_body(default_project, created.json()["id"], source="step", step_run_id=step["id"])
    body["uri"] = "/proc/self/environ"
    assert (await tracking.post("/api/v1/logs", json=body, headers=auth)).status_code == 200
    read = await tracking.get(
        f"/api/v1/steps/{step['id']}/logs", params={"source": "step"}, headers=auth
    )
    assert read.status_code == 403
    assert read.json() == {
        "detail": [
            "IllegalOperationError",
            "Files in a local artifact store cannot be accessed from the server.",
        ]
    }
