"""A pipeline's and a snapshot's tags: given at creation, shown wherever they are read,
filtered on, and taken off with them (a pipeline's with its snapshots' and runs')."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers
from tests.tracking.pipeline_run.support import default_stack_id
from tests.tracking.run_metadata.test_endpoints import METADATA, request
from tracking.run_metadata.repository import RunMetadataRepository
from tracking.run_metadata.schemas import MetadataResourceTypes
from tracking.tag.service import TagService

Json = dict[str, Any]
PIPELINES = "/api/v1/pipelines"
SNAPSHOTS = "/api/v1/pipeline_snapshots"


def tag_names(item: Json) -> list[str]:
    return [tag["name"] for tag in item["resources"]["tags"]]


async def post(tracking: httpx.AsyncClient, auth: Headers, path: str, body: Json) -> Any:
    response = await tracking.post(path, json=body, headers=auth)
    assert response.status_code == 200, response.text
    return response.json()


async def pipeline_with_tags(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, tags: list[Any]
) -> Json:
    body = {"project": project["id"], "name": f"p-{uuid.uuid4().hex[:8]}", "tags": tags}
    created: Json = await post(tracking, auth, PIPELINES, body)
    return created


async def snapshot_with_tags(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, pipeline: Json, tags: list[str]
) -> Json:
    body = {
        "project": project["id"],
        "run_name_template": "run-{date}",
        "pipeline_configuration": {"name": pipeline["name"]},
        "stack": await default_stack_id(tracking, auth),
        "pipeline": pipeline["id"],
        "tags": tags,
    }
    created: Json = await post(tracking, auth, SNAPSHOTS, body)
    return created


async def ids(tracking: httpx.AsyncClient, auth: Headers, path: str, **params: str) -> list[str]:
    response = await tracking.get(path, params=params, headers=auth)
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]


async def test_a_pipeline_shows_and_is_found_by_its_tags(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    pipeline = await pipeline_with_tags(
        tracking, auth, default_project, ["team-a", {"name": "prod", "exclusive": False}]
    )
    other = await pipeline_with_tags(tracking, auth, default_project, [])
    assert tag_names(pipeline) == ["prod", "team-a"]
    got = await tracking.get(f"{PIPELINES}/{pipeline['id']}", headers=auth)
    assert tag_names(got.json()) == ["prod", "team-a"]
    assert await ids(tracking, auth, PIPELINES, tags="team-a") == [pipeline["id"]]
    untagged = {"tags": "isnull:"}
    assert await ids(tracking, auth, PIPELINES, **untagged, id=other["id"]) == [other["id"]]
    assert await ids(tracking, auth, PIPELINES, **untagged, id=pipeline["id"]) == []


async def test_a_snapshot_shows_and_is_found_by_its_tags(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    pipeline = await pipeline_with_tags(tracking, auth, default_project, [])
    snapshot = await snapshot_with_tags(tracking, auth, default_project, pipeline, ["v1", "gpu"])
    assert tag_names(snapshot) == ["gpu", "v1"]
    got = await tracking.get(f"{SNAPSHOTS}/{snapshot['id']}", headers=auth)
    assert tag_names(got.json()) == ["gpu", "v1"]
    listed = await tracking.get(SNAPSHOTS, params={"tags": "v1"}, headers=auth)
    (item,) = listed.json()["items"]
    assert (item["id"], tag_names(item)) == (snapshot["id"], ["gpu", "v1"])


async def test_deleting_a_snapshot_takes_off_its_tags(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> None:
    pipeline = await pipeline_with_tags(tracking, auth, default_project, [])
    snapshot = await snapshot_with_tags(tracking, auth, default_project, pipeline, ["gone"])
    deleted = await tracking.delete(f"{SNAPSHOTS}/{snapshot['id']}", headers=auth)
    assert deleted.status_code == 200, deleted.text
    async with tracking_app.state["sessionmaker"]() as session:
        links = await TagService(session).for_resources(
            "pipeline_snapshot", [uuid.UUID(snapshot["id"])]
        )
    assert links == {}


async def test_deleting_a_pipeline_takes_off_the_tags_and_metadata_of_what_goes_with_it(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> None:
    pipeline = await pipeline_with_tags(tracking, auth, default_project, ["p"])
    snapshot = await snapshot_with_tags(tracking, auth, default_project, pipeline, ["s"])
    body = {
        "project": default_project["id"],
        "name": f"run-{uuid.uuid4().hex[:8]}",
        "snapshot": snapshot["id"],
        "status": "running",
        "tags": ["r"],
    }
    run, _ = await post(tracking, auth, "/api/v1/runs", body)
    await post(tracking, auth, METADATA, request(default_project, "pipeline_run", run["id"], a=1))
    deleted = await tracking.delete(f"{PIPELINES}/{pipeline['id']}", headers=auth)
    assert deleted.status_code == 200, deleted.text
    async with tracking_app.state["sessionmaker"]() as session:
        tags = TagService(session)
        links = [
            await tags.for_resources(kind, [uuid.UUID(item["id"])])
            for kind, item in (
                ("pipeline", pipeline),
                ("pipeline_snapshot", snapshot),
                ("pipeline_run", run),
            )
        ]
        metadata = await RunMetadataRepository(session).values(
            MetadataResourceTypes.PIPELINE_RUN, [uuid.UUID(run["id"])]
        )
    assert (links, metadata) == ([{}, {}, {}], {})
