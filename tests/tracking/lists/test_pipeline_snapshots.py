"""``GET /pipeline_snapshots``: items as a snapshot's GET renders them, the reference's
filters (pipeline and stack by name or id, build, flags, tags) and sort keys."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers, new_project
from tests.tracking.pipeline_build.support import create_build
from tests.tracking.pipeline_run.support import create_pipeline, create_snapshot
from tests.tracking.tag.support import create_tag, link

Json = dict[str, Any]
SNAPSHOTS = "/api/v1/pipeline_snapshots"


async def ids(tracking: httpx.AsyncClient, auth: Headers, *params: tuple[str, str]) -> list[str]:
    response = await tracking.get(SNAPSHOTS, params=list(params), headers=auth)
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]


async def test_items_render_as_a_get_does(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await create_snapshot(tracking, auth, default_project)
    page = await tracking.get(SNAPSHOTS, params={"hydrate": "true"}, headers=auth)
    assert page.status_code == 200, page.text
    got = await tracking.get(f"{SNAPSHOTS}/{snapshot['id']}", headers=auth)
    assert page.json()["items"] == [got.json()]
    assert page.json()["total"] == 1
    bare = await tracking.get(SNAPSHOTS, headers=auth)
    assert bare.json()["items"][0]["metadata"] is None


async def test_filters(tracking: httpx.AsyncClient, auth: Headers, default_project: Json) -> None:
    training = await create_pipeline(tracking, auth, default_project, "training")
    serving = await create_pipeline(tracking, auth, default_project, "serving")
    first = await create_snapshot(tracking, auth, default_project, training)
    second = await create_snapshot(tracking, auth, default_project, serving)
    assert await ids(tracking, auth, ("pipeline", "training")) == [first["id"]]
    assert await ids(tracking, auth, ("pipeline", serving["id"])) == [second["id"]]
    assert await ids(tracking, auth, ("stack", "default")) == [first["id"], second["id"]]
    assert await ids(tracking, auth, ("named_only", "true")) == []
    assert await ids(tracking, auth, ("named_only", "false")) == [first["id"], second["id"]]
    assert await ids(tracking, auth, ("deployed", "false")) == [first["id"], second["id"]]
    assert await ids(tracking, auth, ("deployed", "true")) == []
    assert await ids(tracking, auth, ("runnable", "true")) == []
    assert await ids(tracking, auth, ("trigger_id", str(uuid.uuid4()))) == []
    assert await ids(tracking, auth, ("sort_by", "desc:pipeline")) == [first["id"], second["id"]]
    tag = await create_tag(tracking, auth, "blue")
    assert (await link(tracking, auth, tag, "pipeline_snapshot", second)).status_code == 200
    assert await ids(tracking, auth, ("tags", "blue")) == [second["id"]]
    other = await new_project(tracking, auth, "other")
    assert await ids(tracking, auth, ("project", "other")) == []
    assert await ids(tracking, auth, ("project_name_or_id", other["id"])) == []


async def test_build_filters(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    pipeline = await create_pipeline(tracking, auth, default_project, "built")
    stack = (await tracking.get("/api/v1/stacks", headers=auth)).json()["items"][0]["id"]
    build = await create_build(tracking, auth, default_project, stack=stack)
    snapshot = await create_snapshot(tracking, auth, default_project, pipeline)
    body = {**_snapshot_body(default_project, pipeline, stack), "build": build["id"]}
    response = await tracking.post(SNAPSHOTS, json=body, headers=auth)
    assert response.status_code == 200, response.text
    built = response.json()
    assert await ids(tracking, auth, ("build_id", build["id"])) == [built["id"]]
    assert await ids(tracking, auth, ("runnable", "true")) == [built["id"]]
    assert snapshot["id"] in await ids(tracking, auth, ("build_id", "isnull:"))


def _snapshot_body(project: Json, pipeline: Json, stack: str) -> Json:
    return {
        "project": project["id"],
        "run_name_template": "run-{date}",
        "pipeline_configuration": {"name": pipeline["name"]},
        "stack": stack,
        "pipeline": pipeline["id"],
    }


async def test_bad_filters_are_422_and_unknown_projects_404(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    for params in ({"deployed": "maybe"}, {"build_id": "in:x"}, {"sort_by": "colour"}):
        response = await tracking.get(SNAPSHOTS, params=params, headers=auth)
        assert response.status_code == 422, params
    unknown = await tracking.get(SNAPSHOTS, params={"project": "nowhere"}, headers=auth)
    assert unknown.status_code == 404
