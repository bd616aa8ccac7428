"""``/pipeline_deployments``: the reference's former name of snapshots, served by the
snapshot handlers (create with a project by name, list, get, delete; the workspace paths)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.pipeline_run.support import create_pipeline, default_stack_id

Json = dict[str, Any]
OLD = "/api/v1/pipeline_deployments"


async def test_pipeline_deployments_are_snapshots(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    pipeline = await create_pipeline(tracking, auth, default_project, "legacy")
    body = {
        "project": "00000000-0000-0000-0000-000000000000",
        "run_name_template": "run-{date}",
        "pipeline_configuration": {"name": "legacy"},
        "stack": await default_stack_id(tracking, auth),
        "pipeline": pipeline["id"],
    }
    # The path's project wins over the body's.
    workspace = f"/api/v1/workspaces/{default_project['name']}/pipeline_deployments"
    response = await tracking.post(workspace, json=body, headers=auth)
    assert response.status_code == 200, response.text
    created = response.json()
    assert created["body"]["project_id"] == default_project["id"]
    same = await tracking.get(f"/api/v1/pipeline_snapshots/{created['id']}", headers=auth)
    assert (await tracking.get(f"{OLD}/{created['id']}", headers=auth)).json() == same.json()
    by_query = await tracking.post(
        OLD, params={"project_name_or_id": "default"}, json=body, headers=auth
    )
    assert by_query.status_code == 200, by_query.text
    listed = await tracking.get(OLD, params={"pipeline": "legacy"}, headers=auth)
    assert {i["id"] for i in listed.json()["items"]} == {created["id"], by_query.json()["id"]}
    scoped = await tracking.get(workspace, params={"pipeline": "legacy"}, headers=auth)
    assert scoped.json()["total"] == 2
    assert (await tracking.delete(f"{OLD}/{created['id']}", headers=auth)).status_code == 200
    gone = await tracking.get(f"{OLD}/{created['id']}", headers=auth)
    assert gone.status_code == 404
    assert gone.json()["detail"][0] == "KeyError"
