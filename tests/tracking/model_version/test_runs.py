"""A run (and its steps) of a pipeline configured with a model: the version the
reference makes or finds at run and step creation, linked to the run and shown on it."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.model.support import VERSIONS, create_model, create_model_version
from tests.tracking.pipeline_run.support import (
    create_pipeline,
    create_snapshot,
    create_step,
    run_of_snapshot,
)

Json = dict[str, Any]


async def run_with_model(
    tracking: httpx.AsyncClient,
    auth: Headers,
    project: Json,
    model: Json,
    status: int = 200,
    step_model: Json | None = None,
) -> httpx.Response:
    """A run of a new snapshot whose pipeline configures ``model`` and whose one step,
    ``trainer``, configures ``step_model`` (as the client sends it: the step's own
    overrides; a pipeline's model is not its steps')."""
    pipeline = await create_pipeline(tracking, auth, project, uuid.uuid4().hex[:8])
    overrides: Json = {"name": "trainer"}
    if step_model is not None:
        overrides["model"] = step_model
    snapshot = await create_snapshot(
        tracking,
        auth,
        project,
        pipeline,
        pipeline_configuration={"name": pipeline["name"], "model": model},
        step_configurations={"trainer": {"step_config_overrides": overrides}},
    )
    return await run_of_snapshot(tracking, auth, project, snapshot, status)


async def test_each_run_makes_the_next_numbered_version_and_links_it(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    runs = [
        (await run_with_model(tracking, auth, default_project, {"name": "m1"})).json()[0]
        for _ in range(2)
    ]
    versions = [run["resources"]["model_version"] for run in runs]
    assert [(v["name"], v["body"]["number"]) for v in versions] == [("1", 1), ("2", 2)]
    assert versions[0]["body"]["model"]["name"] == "m1"
    assert (versions[0]["metadata"], versions[0]["resources"]) == (None, None)
    links = await tracking.get(
        "/api/v1/model_version_pipeline_runs",
        params={"model_version_id": versions[1]["id"]},
        headers=auth,
    )
    (link,) = links.json()["items"]
    assert link["body"]["pipeline_run"]["id"] == runs[1]["id"]
    assert link["body"]["pipeline_run"]["resources"] is None


async def test_a_step_gets_the_runs_numbered_version_of_its_own_model(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = {"name": "m1"}
    run = (await run_with_model(tracking, auth, default_project, model, step_model=model)).json()
    step = await create_step(tracking, auth, default_project, run[0], "trainer")
    version = run[0]["resources"]["model_version"]
    assert step["body"]["model_version_id"] == version["id"]
    assert step["resources"]["model_version"]["id"] == version["id"]
    listed = await tracking.get(VERSIONS, params={"model": "m1"}, headers=auth)
    assert listed.json()["total"] == 1


async def test_a_step_without_a_model_of_its_own_has_no_version(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = (await run_with_model(tracking, auth, default_project, {"name": "m1"})).json()[0]
    step = await create_step(tracking, auth, default_project, run, "trainer")
    assert step["body"]["model_version_id"] is None
    assert step["resources"]["model_version"] is None


async def test_a_named_version_is_made_once_and_reused(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    configured = {"name": "m1", "version": "v-{date}"}
    first = (await run_with_model(tracking, auth, default_project, configured)).json()[0]
    second = (await run_with_model(tracking, auth, default_project, configured)).json()[0]
    version = first["resources"]["model_version"]
    assert version["name"].startswith("v-2")
    assert second["resources"]["model_version"]["id"] == version["id"]


async def test_a_stage_names_the_version_in_it(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = await create_model(tracking, auth, default_project, "m1")
    await create_model_version(tracking, auth, model)
    production = await create_model_version(tracking, auth, model, stage="production")
    configured = {"name": "m1", "version": "production"}
    run = (await run_with_model(tracking, auth, default_project, configured)).json()[0]
    assert run["resources"]["model_version"]["id"] == production["id"]
    latest = {"name": "m1", "version": "latest"}
    run = (await run_with_model(tracking, auth, default_project, latest)).json()[0]
    assert run["resources"]["model_version"]["id"] == production["id"]


async def test_a_missing_stage_refuses_the_run_with_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    configured = {"name": "m1", "version": "staging"}
    response = await run_with_model(tracking, auth, default_project, configured, status=404)
    assert response.json()["detail"][0] == "KeyError"
    assert "No staging stage version found" in response.json()["detail"][1]


async def test_deleting_the_version_leaves_the_run_without_one(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = (await run_with_model(tracking, auth, default_project, {"name": "m1"})).json()[0]
    version = run["resources"]["model_version"]
    assert (await tracking.delete(f"{VERSIONS}/{version['id']}", headers=auth)).status_code == 200
    again = (await tracking.get(f"/api/v1/runs/{run['id']}", headers=auth)).json()
    assert again["resources"]["model_version"] is None


async def test_an_invalid_configured_model_refuses_the_run_with_400(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    configured = {"name": "m1", "tags": ["x" * 300]}
    response = await run_with_model(tracking, auth, default_project, configured, status=400)
    assert response.json()["detail"][0] == "ValueError"


async def test_runs_and_steps_filter_by_their_model_and_version(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = {"name": "m1"}
    run = (await run_with_model(tracking, auth, default_project, model, step_model=model)).json()
    other = (await run_with_model(tracking, auth, default_project, {"name": "m2"})).json()
    step = await create_step(tracking, auth, default_project, run[0], "trainer")
    version = run[0]["resources"]["model_version"]["id"]

    async def ids(path: str, **params: str) -> list[str]:
        response = await tracking.get(path, params=params, headers=auth)
        assert response.status_code == 200, response.text
        return [item["id"] for item in response.json()["items"]]

    assert await ids("/api/v1/runs", model="m1") == [run[0]["id"]]
    assert await ids("/api/v1/runs", model_version_id=version) == [run[0]["id"]]
    linked = {"linked_to_model_version_id": other[0]["resources"]["model_version"]["id"]}
    assert await ids("/api/v1/runs", **linked) == [other[0]["id"]]
    assert await ids("/api/v1/steps", model="m1") == [step["id"]]
    assert await ids("/api/v1/steps", model="m2") == []
