"""The reference's filters that lists other than the runs list lacked (see
``test_reference_filters``): each narrows the list it is given to, on real rows."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.pipeline_run.support import create_pipeline, create_run, create_step
from tests.tracking.schedule.test_endpoints import schedule_body
from tests.tracking.service_connector.support import create as create_connector

Json = dict[str, Any]


async def _names(tracking: httpx.AsyncClient, auth: Headers, path: str, **params: str) -> list[str]:
    response = await tracking.get(path, params=params, headers=auth)
    assert response.status_code == 200, response.text
    body = response.json()
    items = body["items"] if isinstance(body, dict) else body
    return [item["name"] for item in items]


async def test_pipelines_and_schedules_take_the_project_as_project_name_or_id(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    await create_pipeline(tracking, auth, default_project, "listed")
    body = schedule_body(default_project, name="nightly")
    assert (await tracking.post("/api/v1/schedules", json=body, headers=auth)).status_code == 200
    other = await tracking.post("/api/v1/projects", json={"name": "other"}, headers=auth)
    assert other.status_code == 200, other.text
    for path, name in (("/api/v1/pipelines", "listed"), ("/api/v1/schedules", "nightly")):
        assert await _names(tracking, auth, path, project_name_or_id="default") == [name]
        assert await _names(tracking, auth, path, project_name_or_id="other") == []
        # It wins over ``project``, as the reference's.
        both = {"project_name_or_id": "other", "project": "default"}
        assert await _names(tracking, auth, path, **both) == []
        missing = await tracking.get(path, params={"project_name_or_id": "nowhere"}, headers=auth)
        assert missing.status_code == 404, missing.text


async def test_schedules_filter_on_their_times_and_archiving(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    for name, start, once in (
        ("early", "2026-01-01T00:00:00", None),
        ("late", "2026-06-01T00:00:00", "2026-06-02T00:00:00"),
    ):
        body = schedule_body(
            default_project,
            name=name,
            start_time=start,
            end_time=start.replace("T00", "T12"),
            run_once_start_time=once,
        )
        created = await tracking.post("/api/v1/schedules", json=body, headers=auth)
        assert created.status_code == 200, created.text
    path = "/api/v1/schedules"
    assert await _names(tracking, auth, path, start_time="gte:2026-03-01 00:00:00") == ["late"]
    assert await _names(tracking, auth, path, end_time="lt:2026-01-02 00:00:00") == ["early"]
    assert await _names(tracking, auth, path, run_once_start_time="isnotnull:") == ["late"]
    assert await _names(tracking, auth, path, is_archived="true") == []
    assert await _names(tracking, auth, path, is_archived="false", sort_by="name") == [
        "early",
        "late",
    ]


async def test_steps_are_all_their_first_version(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    step = await create_step(tracking, auth, default_project, run)
    assert step["body"]["version"] == 1
    for path in ("/api/v1/steps", f"/api/v1/runs/{run['id']}/steps"):
        assert await _names(tracking, auth, path, version="1") == ["trainer"]
        assert await _names(tracking, auth, path, version="gt:1") == []


async def test_a_runs_steps_take_the_project_and_the_creator(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    step = await create_step(tracking, auth, default_project, run)
    path = f"/api/v1/runs/{run['id']}/steps"
    other = await tracking.post("/api/v1/projects", json={"name": "elsewhere"}, headers=auth)
    assert other.status_code == 200, other.text
    assert await _names(tracking, auth, path, project="default") == ["trainer"]
    assert await _names(tracking, auth, path, project=default_project["id"]) == ["trainer"]
    assert await _names(tracking, auth, path, project="elsewhere") == []
    creator = step["body"]["user_id"]
    assert await _names(tracking, auth, path, scope_user=creator) == ["trainer"]
    assert await _names(tracking, auth, path, scope_user=str(uuid.uuid4())) == []
    missing = await tracking.get(path, params={"project": "nowhere"}, headers=auth)
    assert missing.status_code == 404, missing.text


async def test_connector_resources_are_those_of_the_connectors_list_page(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    for name in ("registry-a", "registry-b", "registry-c"):
        await create_connector(tracking, auth, name=name)
    path = "/api/v1/service_connectors/resources"
    assert await _names(tracking, auth, path, name="registry-b") == ["registry-b"]
    assert await _names(tracking, auth, path, name="startswith:registry-", size="2") == [
        "registry-a",
        "registry-b",
    ]
    assert await _names(tracking, auth, path, sort_by="desc:name", size="1") == ["registry-c"]
    assert await _names(tracking, auth, path, connector_type="kubernetes") == []
    # Connectors are global: a project is accepted and ignored, as the reference does.
    listed = await _names(tracking, auth, "/api/v1/service_connectors", project_name_or_id="x")
    assert sorted(listed) == ["registry-a", "registry-b", "registry-c"]
