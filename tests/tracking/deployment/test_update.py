"""``PUT /deployments/{id}``: what is given is set, a snapshot of the deployment's project,
a free name, tags; as ZenML 0.96.3 updates a deployment."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers, new_project
from tests.tracking.artifact_version.support import Json
from tests.tracking.deployment.test_endpoints import (
    DEPLOYMENTS,
    create_deployer,
    create_deployment,
)
from tests.tracking.pipeline_run.support import create_snapshot


async def deployment(tracking: httpx.AsyncClient, auth: Headers, project: Json, name: str) -> Json:
    snapshot = await create_snapshot(tracking, auth, project)
    deployer = await create_deployer(tracking, auth, f"dep-{name}")
    return await create_deployment(tracking, auth, project, name, snapshot, deployer, tags=["old"])


async def put(tracking: httpx.AsyncClient, auth: Headers, deployment_id: str, body: Json) -> Any:
    return await tracking.put(f"{DEPLOYMENTS}/{deployment_id}", json=body, headers=auth)


async def test_update_sets_what_is_given(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
):
    created = await deployment(tracking, auth, default_project, "serve")
    snapshot = await create_snapshot(tracking, auth, default_project)
    body = {
        "name": "served", "status": "running", "url": "http://127.0.0.1:9000",
        "deployment_metadata": {"pid": 7}, "snapshot_id": snapshot["id"],
        "add_tags": ["new"], "remove_tags": ["old"],
    }  # fmt: skip
    response = await put(tracking, auth, created["id"], body)
    assert response.status_code == 200, response.text
    updated = response.json()
    assert updated["name"] == "served"
    assert updated["body"]["status"] == "running"
    assert updated["body"]["url"] == "http://127.0.0.1:9000"
    assert updated["metadata"]["deployment_metadata"] == {"pid": 7}
    assert updated["resources"]["snapshot"]["id"] == snapshot["id"]
    assert [tag["name"] for tag in updated["resources"]["tags"]] == ["new"]
    # Null leaves a field as it is.
    again = await put(tracking, auth, created["id"], {"url": None, "status": "error"})
    assert again.json()["body"]["url"] == "http://127.0.0.1:9000"
    assert again.json()["body"]["status"] == "error"


async def test_a_taken_name_is_409(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
):
    await deployment(tracking, auth, default_project, "a")
    other = await deployment(tracking, auth, default_project, "b")
    response = await put(tracking, auth, other["id"], {"name": "a"})
    assert response.status_code == 409
    assert response.json()["detail"][0] == "EntityExistsError"


async def test_a_snapshot_of_another_project_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
):
    created = await deployment(tracking, auth, default_project, "serve")
    foreign = await create_snapshot(tracking, auth, await new_project(tracking, auth, "other"))
    response = await put(tracking, auth, created["id"], {"snapshot_id": foreign["id"]})
    assert response.status_code == 404
    assert response.json()["detail"][1] == (
        f"The pipeline snapshot with ID {foreign['id']} referenced by the deployment being "
        f"updated was not found in the '{default_project['name']}' project"
    )


async def test_bad_status_is_422_and_unknown_deployment_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
):
    created = await deployment(tracking, auth, default_project, "serve")
    assert (await put(tracking, auth, created["id"], {"status": "flying"})).status_code == 422
    assert (await put(tracking, auth, str(uuid.uuid4()), {"url": "x"})).status_code == 404
