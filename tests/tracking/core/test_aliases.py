"""The deprecated ``/workspaces/{project_name_or_id}/<resource>`` paths: the same handlers
as ``/<resource>``, the path's project scoping lists and creations as ZenML 0.96.3's."""

from __future__ import annotations

from typing import Any

import httpx

from shared.routing import ApiRoute
from tests.tracking.artifact.support import Headers, names, new_project
from tests.tracking.service_connector.support import create as create_connector
from tracking.app import routes
from tracking.core.aliases import RENAMED, WORKSPACE_ALIASES, WORKSPACE_TARGETS

Json = dict[str, Any]


def workspace(project: str, resource: str) -> str:
    return f"/api/v1/workspaces/{project}/{resource}"


def test_every_alias_is_the_handler_of_its_resource_path():
    api = [r for r in routes() if isinstance(r, ApiRoute)]
    table = {(m, r.path): r.endpoint for r in api for m in r.methods or ()}
    for resource, methods in WORKSPACE_ALIASES.items():
        for method in methods:
            alias = table[(method, workspace("{project_name_or_id}", resource))]
            target = WORKSPACE_TARGETS.get(resource, resource)
            assert alias is table[(method, f"/api/v1/{target}")], (method, resource)
    for new, (old, methods) in RENAMED.items():
        for method in methods:
            one = "/{snapshot_id:uuid_param}" if method == "DELETE" else ""
            assert table[(method, old + one)] is table[(method, new + one)], (method, old)


async def test_a_pipeline_made_on_a_workspace_path_is_of_that_project(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
):
    other = await new_project(tracking, auth, "other")
    body = {"project": default_project["id"], "name": "trainer"}
    response = await tracking.post(workspace("other", "pipelines"), json=body, headers=auth)
    assert response.status_code == 200, response.text
    assert response.json()["body"]["project_id"] == other["id"]
    # Listed under that project's path, whatever ?project= says; not under the other's.
    params = {"project": default_project["id"]}
    listed = await tracking.get(workspace(other["id"], "pipelines"), params=params, headers=auth)
    assert names(listed) == ["trainer"]
    default = workspace(default_project["name"], "pipelines")
    assert names(await tracking.get(default, headers=auth)) == []


async def test_a_snapshot_is_read_and_made_under_its_old_name(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
):
    other = await new_project(tracking, auth, "other")
    pipeline = await tracking.post(
        workspace("other", "pipelines"), json={"project": other["id"], "name": "p"}, headers=auth
    )
    stacks = await tracking.get("/api/v1/stacks", headers=auth)
    body = {
        "project": default_project["id"], "run_name_template": "run", "pipeline_configuration":
        {"name": "p"}, "stack": stacks.json()["items"][0]["id"], "pipeline": pipeline.json()["id"],
    }  # fmt: skip
    made = await tracking.post(workspace("other", "pipeline_deployments"), json=body, headers=auth)
    assert made.status_code == 200, made.text
    assert made.json()["body"]["project_id"] == other["id"]
    read = await tracking.get(f"/api/v1/pipeline_deployments/{made.json()['id']}", headers=auth)
    assert read.json()["id"] == made.json()["id"]
    listed = await tracking.get(
        workspace(other["name"], "pipeline_deployments"),
        params={"project_name_or_id": default_project["id"]}, headers=auth,
    )  # fmt: skip
    assert [item["id"] for item in listed.json()["items"]] == [made.json()["id"]]


async def test_an_unknown_workspace_is_404(tracking: httpx.AsyncClient, auth: Headers):
    response = await tracking.get(workspace("nowhere", "schedules"), headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"][0] == "KeyError"


async def test_stacks_ignore_the_workspace_and_runs_are_listed_by_it(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
):
    stacks = await tracking.get(workspace(default_project["name"], "stacks"), headers=auth)
    assert names(stacks) == ["default"]
    runs = await tracking.get(workspace(default_project["name"], "runs"), headers=auth)
    assert runs.status_code == 200
    assert runs.json()["total"] == 0


async def test_connector_resources_are_listed_on_any_workspace_path(
    tracking: httpx.AsyncClient, auth: Headers
):
    """As the reference, the path's project is taken and not used: connectors are global,
    so even a project that does not exist lists them."""
    await create_connector(tracking, auth)
    plain = await tracking.get("/api/v1/service_connectors/resources", headers=auth)
    for project in ("default", "nowhere"):
        aliased = await tracking.get(workspace(project, "resources"), headers=auth)
        assert aliased.status_code == 200, aliased.text
        assert aliased.json() == plain.json()
    assert [r["resources"][0]["resource_ids"] for r in plain.json()] == [["ghcr.io"]]
    bad = await tracking.get(
        workspace("default", "resources"), params={"scope_user": "me"}, headers=auth
    )
    assert bad.status_code == 422, bad.text
    assert bad.json()["detail"][0]["loc"] == ["query", "scope_user"]
