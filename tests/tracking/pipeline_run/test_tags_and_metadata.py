"""A run's and a step's tags and metadata: given at creation, changed by an update,
filtered on, read in full, and gone with the run."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers
from tests.tracking.pipeline_run.support import create_run, create_snapshot, create_step
from tests.tracking.run_metadata.test_endpoints import METADATA, request
from tests.tracking.tag.support import TAGS, create_tag
from tracking.run_metadata.repository import RunMetadataRepository
from tracking.run_metadata.schemas import MetadataResourceTypes
from tracking.tag.service import TagService

Json = dict[str, Any]
RUNS = "/api/v1/runs"


def tag_names(run: Json) -> list[str]:
    return [tag["name"] for tag in run["resources"]["tags"]]


async def log(tracking: httpx.AsyncClient, auth: Headers, body: Json) -> None:
    response = await tracking.post(METADATA, json=body, headers=auth)
    assert response.status_code == 200, response.text


async def test_a_run_takes_the_tags_of_its_request(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    # The client sends the pipeline configuration's tags: names or Tag objects.
    tags = ["nightly", {"name": "gpu", "color": "red", "exclusive": False, "cascade": False}]
    run = await create_run(tracking, auth, default_project, tags=tags)
    assert tag_names(run) == ["gpu", "nightly"]
    got = await tracking.get(f"{RUNS}/{run['id']}", headers=auth)
    assert tag_names(got.json()) == ["gpu", "nightly"]
    again = await create_run(tracking, auth, default_project, tags=["nightly"])
    assert tag_names(again) == ["nightly"]


async def test_a_run_with_a_tag_name_too_long_is_422(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    response = await tracking.put(
        f"{RUNS}/{run['id']}", json={"add_tags": ["x" * 256]}, headers=auth
    )
    assert response.status_code == 422, response.text


async def test_an_update_adds_and_removes_tags(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project, tags=["a"])
    response = await tracking.put(
        f"{RUNS}/{run['id']}", json={"add_tags": ["b", "c"], "remove_tags": ["a"]}, headers=auth
    )
    assert response.status_code == 200, response.text
    assert tag_names(response.json()) == ["b", "c"]


async def test_a_tag_given_as_a_uuid_is_the_tag_of_that_id(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    # The reference looks a UUID string up by id (never as a name): no tag is made.
    tag = await create_tag(tracking, auth, "release")
    run = await create_run(tracking, auth, default_project, tags=[tag["id"]])
    assert tag_names(run) == ["release"]
    path = f"{RUNS}/{run['id']}"
    other = await create_tag(tracking, auth, "candidate")
    added = await tracking.put(path, json={"add_tags": [other["id"].upper()]}, headers=auth)
    assert tag_names(added.json()) == ["candidate", "release"]
    removed = await tracking.put(path, json={"remove_tags": [tag["id"]]}, headers=auth)
    assert tag_names(removed.json()) == ["candidate"]
    listed = await tracking.get(TAGS, headers=auth)
    assert sorted(t["name"] for t in listed.json()["items"]) == ["candidate", "release"]


async def test_a_tag_id_that_names_no_tag_is_404_and_nothing_changes(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project, tags=["kept"])
    unknown = uuid.uuid4()
    response = await tracking.put(
        f"{RUNS}/{run['id']}", json={"add_tags": ["new", str(unknown)]}, headers=auth
    )
    assert response.status_code == 404, response.text
    assert response.json()["detail"] == [
        "KeyError",
        f"Unable to get tag with ID '{unknown}': No tag with this ID found",
    ]
    got = await tracking.get(f"{RUNS}/{run['id']}", headers=auth)
    assert tag_names(got.json()) == ["kept"]


async def test_runs_are_filtered_by_tag_and_by_metadata(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    tagged = await create_run(tracking, auth, default_project, tags=["wanted"])
    other = await create_run(tracking, auth, default_project, tags=["other"])
    await log(tracking, auth, request(default_project, "pipeline_run", tagged["id"], note="x"))
    await log(tracking, auth, request(default_project, "pipeline_run", other["id"], note="y"))
    await log(tracking, auth, request(default_project, "pipeline_run", other["id"], gt="x:1"))

    async def ids(**params: str) -> list[str]:
        response = await tracking.get(RUNS, params=params, headers=auth)
        assert response.status_code == 200, response.text
        return [item["id"] for item in response.json()["items"]]

    assert await ids(tags="wanted") == [tagged["id"]]
    assert await ids(tags="startswith:oth") == [other["id"]]
    assert await ids(run_metadata="note:x") == [tagged["id"]]
    assert await ids(run_metadata="note:contains:y") == [other["id"]]
    assert await ids(sort_by="asc:tags") == [other["id"], tagged["id"]]
    # As the reference reads them: a key named like an operator, an empty key (no such key).
    assert await ids(run_metadata="gt:x:1") == [other["id"]]
    assert await ids(run_metadata=":x") == []
    bad = await tracking.get(RUNS, params={"run_metadata": "no-key"}, headers=auth)
    assert bad.status_code == 422, bad.text


async def test_a_run_shows_its_own_metadata_and_in_full_its_steps(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    step = await create_step(tracking, auth, default_project, run, "trainer")
    await log(tracking, auth, request(default_project, "pipeline_run", run["id"], note="run"))
    await log(tracking, auth, request(default_project, "step_run", step["id"], loss=0.25))

    got = await tracking.get(f"{RUNS}/{run['id']}", headers=auth)
    assert got.json()["metadata"]["run_metadata"] == {"note": "run"}
    full = await tracking.get(
        f"{RUNS}/{run['id']}", params={"include_full_metadata": "true"}, headers=auth
    )
    assert full.json()["metadata"]["run_metadata"] == {"note": "run", "trainer::loss": 0.25}
    listed = await tracking.get(
        RUNS,
        params={"id": run["id"], "hydrate": "true", "include_full_metadata": "true"},
        headers=auth,
    )
    assert (
        listed.json()["items"][0]["metadata"]["run_metadata"]
        == full.json()["metadata"]["run_metadata"]
    )
    got_step = await tracking.get(f"/api/v1/steps/{step['id']}", headers=auth)
    assert got_step.json()["metadata"]["run_metadata"] == {"loss": 0.25}
    steps = await tracking.get(
        "/api/v1/steps", params={"pipeline_run_id": run["id"], "hydrate": "true"}, headers=auth
    )
    assert steps.json()["items"][0]["metadata"]["run_metadata"] == {"loss": 0.25}
    found = await tracking.get("/api/v1/steps", params={"run_metadata": "loss:0.25"}, headers=auth)
    assert [item["id"] for item in found.json()["items"]] == [step["id"]]


async def test_deleting_a_run_takes_off_its_tags_and_its_and_its_steps_metadata(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> None:
    run = await create_run(tracking, auth, default_project, tags=["kept"])
    step = await create_step(tracking, auth, default_project, run)
    await log(tracking, auth, request(default_project, "pipeline_run", run["id"], a=1))
    await log(tracking, auth, request(default_project, "step_run", step["id"], b=2))
    deleted = await tracking.delete(f"{RUNS}/{run['id']}", headers=auth)
    assert deleted.status_code == 200, deleted.text

    tag = (await tracking.get("/api/v1/tags", params={"name": "kept"}, headers=auth)).json()
    (item,) = tag["items"]
    got = await tracking.get(f"/api/v1/tags/{item['id']}", headers=auth)
    assert got.json()["metadata"]["tagged_count"] == 0
    run_id, step_id = uuid.UUID(run["id"]), uuid.UUID(step["id"])
    async with tracking_app.state["sessionmaker"]() as session:
        metadata = RunMetadataRepository(session)
        runs = await metadata.values(MetadataResourceTypes.PIPELINE_RUN, [run_id])
        steps = await metadata.values(MetadataResourceTypes.STEP_RUN, [step_id])
        links = await TagService(session).for_resources("pipeline_run", [run_id])
    assert (runs, steps, links) == ({}, {}, {})


async def test_a_tag_object_makes_its_tag_with_its_colour_and_exclusivity(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    """An exclusive tag is on one run of a pipeline; a Tag object that disagrees with the
    tag's exclusivity is refused (a plain name is not)."""
    snapshot = await create_snapshot(tracking, auth, default_project)

    async def run_of_snapshot(tags: list[Any]) -> httpx.Response:
        body = {
            "project": default_project["id"],
            "name": f"run-{uuid.uuid4().hex[:8]}",
            "snapshot": snapshot["id"],
            "status": "running",
            "tags": tags,
        }
        return await tracking.post(RUNS, json=body, headers=auth)

    solo = {"name": f"solo-{uuid.uuid4().hex[:6]}", "color": "red", "exclusive": True}
    first = (await run_of_snapshot([solo])).json()[0]
    (tag,) = first["resources"]["tags"]
    assert (tag["body"]["color"], tag["body"]["exclusive"]) == ("red", True)
    second = (await run_of_snapshot([solo["name"]])).json()[0]
    assert tag_names(second) == [solo["name"]]
    got = await tracking.get(f"{RUNS}/{first['id']}", headers=auth)
    assert tag_names(got.json()) == []  # the exclusive tag moved to the newer run
    refused = await run_of_snapshot([{"name": solo["name"], "exclusive": False}])
    assert refused.status_code == 400, refused.text
    assert "has been defined as an exclusive tag" in refused.text
