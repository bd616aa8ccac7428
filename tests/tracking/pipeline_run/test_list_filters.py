"""The runs list's filters and sort keys that reach past the run (its snapshot, stack,
build, schedule, pipeline), as ZenML 0.96.3's ``PipelineRunFilter`` declares them: each
narrows the list to the runs it names, and run statistics take them too."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.tracking.artifact.support import Headers
from tests.tracking.component.support import create_component
from tests.tracking.pipeline_build.support import create_build
from tests.tracking.pipeline_run.support import create_pipeline, create_snapshot, default_stack_id
from tests.tracking.workload_scope.support import create_schedule

Json = dict[str, Any]
RUNS = "/api/v1/runs"
PREFIX = "filtered-"


@dataclass(frozen=True)
class World:
    """Two runs: ``plain`` (running, pipeline ``alpha``, the default stack, a snapshot
    with nothing more) and ``rich`` (completed, pipeline ``beta``, a stack of its own with
    the component ``lens``, a remote build for that stack, a schedule, a template and
    ``plain``'s snapshot as its source)."""

    plain: Json
    rich: Json
    stack: Json
    build: Json
    schedule: Json
    template_id: str


async def _run(
    tracking: httpx.AsyncClient,
    auth: Headers,
    project: Json,
    snapshot: Json,
    name: str,
    status: str,
) -> Json:
    body = {"project": project["id"], "name": name, "snapshot": snapshot["id"], "status": status}
    response = await tracking.post(RUNS, json=body, headers=auth)
    assert response.status_code == 200, response.text
    run: Json = response.json()[0]
    return run


@pytest.fixture
async def world(tracking: httpx.AsyncClient, auth: Headers, default_project: Json) -> World:
    store = await create_component(tracking, auth, "lens", "artifact_store")
    runner = await create_component(tracking, auth, "runner", "orchestrator")
    components = {"artifact_store": [store["id"]], "orchestrator": [runner["id"]]}
    response = await tracking.post(
        "/api/v1/stacks", json={"name": "remote", "components": components}, headers=auth
    )
    assert response.status_code == 200, response.text
    stack = response.json()
    build = await create_build(tracking, auth, default_project, stack=stack["id"])
    schedule = await create_schedule(tracking, auth, default_project)
    template_id = str(uuid.uuid4())
    alpha = await create_pipeline(tracking, auth, default_project, "alpha")
    beta = await create_pipeline(tracking, auth, default_project, "beta")
    first = await create_snapshot(tracking, auth, default_project, alpha)
    second = await create_snapshot(
        tracking,
        auth,
        default_project,
        beta,
        stack=stack["id"],
        build=build["id"],
        schedule=schedule["id"],
        template=template_id,
        source_snapshot=first["id"],
    )
    # The rich run first: ties in a sort are broken by id, and the sorts below must not
    # pass by following the order of creation.
    rich = await _run(tracking, auth, default_project, second, f"{PREFIX}rich", "completed")
    plain = await _run(tracking, auth, default_project, first, f"{PREFIX}plain", "running")
    return World(plain, rich, stack, build, schedule, template_id)


async def listed(tracking: httpx.AsyncClient, auth: Headers, **params: str) -> list[str]:
    """The names of the fixture's runs the list gives for ``params``, in its order."""
    query = {"name": f"startswith:{PREFIX}", "sort_by": "asc:name", **params}
    response = await tracking.get(RUNS, params=query, headers=auth)
    assert response.status_code == 200, response.text
    return [item["name"].removeprefix(PREFIX) for item in response.json()["items"]]


async def test_the_snapshot_filters_narrow_to_the_runs_whose_snapshot_has_it(
    tracking: httpx.AsyncClient, auth: Headers, world: World
) -> None:
    for name, value in [
        ("stack_id", world.stack["id"]),
        ("build_id", world.build["id"]),
        ("schedule_id", world.schedule["id"]),
        ("template_id", world.template_id),
        ("source_snapshot_id", world.plain["resources"]["snapshot"]["id"]),
    ]:
        assert await listed(tracking, auth, **{name: value}) == ["rich"], name
        assert await listed(tracking, auth, **{name: str(uuid.uuid4())}) == [], name
    default = await default_stack_id(tracking, auth)
    assert await listed(tracking, auth, stack_id=default) == ["plain"]
    assert await listed(tracking, auth, build_id="isnull:") == ["plain"]


async def test_stack_pipeline_and_component_filters_take_a_name_or_an_id(
    tracking: httpx.AsyncClient, auth: Headers, world: World
) -> None:
    assert await listed(tracking, auth, stack="remote") == ["rich"]
    assert await listed(tracking, auth, stack=world.stack["id"]) == ["rich"]
    assert await listed(tracking, auth, stack="default") == ["plain"]
    assert await listed(tracking, auth, stack="contains:emo") == ["rich"]
    assert await listed(tracking, auth, pipeline="alpha") == ["plain"]
    assert await listed(tracking, auth, pipeline=world.rich["body"]["pipeline_id"]) == ["rich"]
    assert await listed(tracking, auth, pipeline_name="beta") == ["rich"]
    assert await listed(tracking, auth, pipeline_name="startswith:al") == ["plain"]
    assert await listed(tracking, auth, stack_component="lens") == ["rich"]
    assert await listed(tracking, auth, stack_component="nowhere") == []


async def test_in_progress_and_templatable_split_the_runs(
    tracking: httpx.AsyncClient, auth: Headers, world: World
) -> None:
    assert await listed(tracking, auth, in_progress="true") == ["plain"]
    assert await listed(tracking, auth, in_progress="false") == ["rich"]
    # The rich run's snapshot has a remote build for a stack: it can be run again.
    assert await listed(tracking, auth, templatable="true") == ["rich"]
    assert await listed(tracking, auth, templatable="false") == ["plain"]
    for run, templatable in ((world.rich, True), (world.plain, False)):
        got = await tracking.get(f"{RUNS}/{run['id']}", headers=auth)
        assert got.json()["metadata"]["is_templatable"] is templatable
    refused = await tracking.get(RUNS, params={"in_progress": "maybe"}, headers=auth)
    assert refused.status_code == 422, refused.text
    assert refused.json()["detail"][0]["loc"] == ["query", "in_progress"]


async def test_what_no_run_here_records_matches_no_run_when_asked_for(
    tracking: httpx.AsyncClient, auth: Headers, world: World
) -> None:
    some = str(uuid.uuid4())
    for name in (
        "code_repository_id",
        "code_repository",
        "triggered_by_step_run_id",
        "triggered_by_deployment_id",
        "parent_run_id",
    ):
        assert await listed(tracking, auth, **{name: some}) == [], name
        assert await listed(tracking, auth, **{name: "isnull:"}) == ["plain", "rich"], name
    assert await listed(tracking, auth, root_runs_only="true") == ["plain", "rich"]
    assert await listed(tracking, auth, root_runs_only="false") == ["plain", "rich"]


async def test_runs_sort_by_their_pipeline_and_stack_names(
    tracking: httpx.AsyncClient, auth: Headers, world: World
) -> None:
    assert await listed(tracking, auth, sort_by="desc:pipeline") == ["rich", "plain"]
    assert await listed(tracking, auth, sort_by="asc:pipeline") == ["plain", "rich"]
    # "default" sorts before "remote".
    assert await listed(tracking, auth, sort_by="asc:stack") == ["plain", "rich"]
    assert await listed(tracking, auth, sort_by="desc:stack") == ["rich", "plain"]
    # No run has a model version: both tie, in the order of their (random) ids, which
    # follows the sort's direction.
    by_id = [name for _, name in sorted([(world.rich["id"], "rich"), (world.plain["id"], "plain")])]
    assert await listed(tracking, auth, sort_by="model") == by_id
    assert await listed(tracking, auth, sort_by="desc:model_version") == by_id[::-1]


async def test_project_name_or_id_picks_the_project(
    tracking: httpx.AsyncClient, auth: Headers, world: World, default_project: Json
) -> None:
    assert await listed(tracking, auth, project_name_or_id="default") == ["plain", "rich"]
    missing = await tracking.get(RUNS, params={"project_name_or_id": "nowhere"}, headers=auth)
    assert missing.status_code == 404, missing.text


async def test_run_statistics_take_the_new_filters(
    tracking: httpx.AsyncClient, auth: Headers, world: World, default_project: Json
) -> None:
    for run_filter in (
        {"stack": "remote"},
        {"stack_component": "lens"},
        {"in_progress": False},
        {"templatable": True},
        {"build_id": world.build["id"]},
    ):
        body = {
            "filter": {"project": default_project["id"], **run_filter},
            "groupings": [{"name": "p", "type": "pipeline"}],
        }
        response = await tracking.post(f"{RUNS}/statistics", json=body, headers=auth)
        assert response.status_code == 200, (run_filter, response.text)
        groups = response.json()["groups"]
        assert groups == [
            {
                "group_keys": {"p": world.rich["body"]["pipeline_id"]},
                "metrics": {},
                "run_count": 1,
            }
        ], run_filter
