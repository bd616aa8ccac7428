"""What a workload token may address in tracking: by id, its own run, schedule or
deployment (a schedule's or deployment's token also any run); it creates no schedules or
deployments. The reference lets a deployment's token do anything."""

from __future__ import annotations

import httpx
import pytest

from tests.identity.conftest import bearer
from tests.tracking.artifact.support import Headers
from tests.tracking.schedule.test_endpoints import SCHEDULES, schedule_body
from tests.tracking.workload_scope import support
from tests.tracking.workload_scope.support import Json, create_scope_object, workload_token

identity = support.identity

PATHS = {
    "pipeline_run": "/api/v1/runs",
    "schedule": "/api/v1/schedules",
    "deployment": "/api/v1/deployments",
}


async def objects(tracking: httpx.AsyncClient, auth: Headers, project: Json) -> dict[str, Json]:
    return {kind: await create_scope_object(tracking, auth, project, kind) for kind in PATHS}


def assert_not_for_this_token(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    assert response.json()["detail"][0] == "AuthorizationException"
    assert "may not be used on" in response.json()["detail"][1]


@pytest.mark.parametrize("kind", list(PATHS))
async def test_workload_token_reads_its_own_object(
    tracking: httpx.AsyncClient,
    identity: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    kind: str,
) -> None:
    item = await create_scope_object(tracking, auth, default_project, kind)
    token = await workload_token(identity, auth, **{f"{kind}_id": item["id"]})
    response = await tracking.get(f"{PATHS[kind]}/{item['id']}", headers=bearer(token))
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("kind", list(PATHS))
async def test_workload_token_cannot_touch_another_object_of_its_kind(
    tracking: httpx.AsyncClient,
    identity: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    kind: str,
) -> None:
    held, other = [await create_scope_object(tracking, auth, default_project, kind) for _ in "ab"]
    token = bearer(await workload_token(identity, auth, **{f"{kind}_id": held["id"]}))
    path = f"{PATHS[kind]}/{other['id']}"
    assert_not_for_this_token(await tracking.get(path, headers=token))
    assert_not_for_this_token(await tracking.delete(path, headers=token))
    assert (await tracking.get(path, headers=auth)).status_code == 200


async def test_run_token_reaches_no_schedule_or_deployment(
    tracking: httpx.AsyncClient, identity: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    made = await objects(tracking, auth, default_project)
    token = bearer(await workload_token(identity, auth, pipeline_run_id=made["pipeline_run"]["id"]))
    for kind in ("schedule", "deployment"):
        response = await tracking.get(f"{PATHS[kind]}/{made[kind]['id']}", headers=token)
        assert_not_for_this_token(response)


@pytest.mark.parametrize("kind", ["schedule", "deployment"])
async def test_schedule_and_deployment_tokens_reach_runs_but_not_each_other(
    tracking: httpx.AsyncClient,
    identity: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    kind: str,
) -> None:
    made = await objects(tracking, auth, default_project)
    token = bearer(await workload_token(identity, auth, **{f"{kind}_id": made[kind]["id"]}))
    run = f"{PATHS['pipeline_run']}/{made['pipeline_run']['id']}"
    assert (await tracking.get(run, headers=token)).status_code == 200
    updated = await tracking.put(run, json={"status": "completed"}, headers=token)
    assert updated.status_code == 200, updated.text
    other = "deployment" if kind == "schedule" else "schedule"
    response = await tracking.get(f"{PATHS[other]}/{made[other]['id']}", headers=token)
    assert_not_for_this_token(response)


async def test_workload_token_creates_no_schedule_or_deployment(
    tracking: httpx.AsyncClient, identity: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    deployment = await create_scope_object(tracking, auth, default_project, "deployment")
    token = bearer(await workload_token(identity, auth, deployment_id=deployment["id"]))
    schedule = await tracking.post(SCHEDULES, json=schedule_body(default_project), headers=token)
    assert schedule.status_code == 401
    assert schedule.json()["detail"] == [
        "AuthorizationException",
        "A workload token may not be used for this operation.",
    ]
    body = {
        "project": default_project["id"],
        "name": "copy",
        "snapshot_id": deployment["resources"]["snapshot"]["id"],
        "deployer_id": deployment["resources"]["deployer"]["id"],
    }
    copy = await tracking.post(PATHS["deployment"], json=body, headers=token)
    assert copy.status_code == 401
