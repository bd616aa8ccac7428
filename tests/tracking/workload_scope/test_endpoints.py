"""Workload tokens used on tracking: accepted while their run, schedule or deployment
accepts them, refused (401, the reference's "Authentication error") once it does not; and
the internal route other services ask."""

from __future__ import annotations

import uuid
from datetime import timedelta

import httpx
import pytest

from tests.identity.conftest import bearer, tracking_service_token
from tests.tracking.artifact.support import Headers
from tests.tracking.pipeline_run.support import create_run
from tests.tracking.workload_scope import support
from tests.tracking.workload_scope.support import (
    Json,
    create_schedule,
    create_served_deployment,
    finish_run,
    set_schedule_active,
    workload_token,
)

identity = support.identity
leeway = support.leeway
tracking_settings = support.tracking_settings

SCOPES = "/internal/v1/workload_scopes"


async def service_headers(identity: httpx.AsyncClient) -> Headers:
    return bearer(await tracking_service_token(identity))


def assert_refused(response: httpx.Response, reason: str) -> None:
    assert response.status_code == 401, response.text
    assert response.json() == {"detail": ["CredentialsNotValid", f"Authentication error: {reason}"]}


async def test_run_token_works_until_the_run_finishes(
    tracking: httpx.AsyncClient, identity: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    token = await workload_token(identity, auth, pipeline_run_id=run["id"])
    got = await tracking.get(f"/api/v1/runs/{run['id']}", headers=bearer(token))
    assert got.status_code == 200, got.text
    await finish_run(tracking, auth, run)
    response = await tracking.get(f"/api/v1/runs/{run['id']}", headers=bearer(token))
    assert_refused(
        response,
        f"pipeline run {run['id']} has finished and API tokens scoped to it are no longer valid",
    )


@pytest.mark.parametrize("leeway", [timedelta(hours=1)])
async def test_run_token_outlives_its_run_by_the_leeway(
    tracking: httpx.AsyncClient, identity: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    token = await workload_token(identity, auth, pipeline_run_id=run["id"])
    finished = await finish_run(tracking, auth, run)
    assert finished["body"]["in_progress"] is False
    response = await tracking.get("/api/v1/artifacts", headers=bearer(token))
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("leeway", [timedelta(seconds=-1)])
async def test_negative_leeway_keeps_run_tokens_for_ever(
    tracking: httpx.AsyncClient, identity: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    token = await workload_token(identity, auth, pipeline_run_id=run["id"])
    await finish_run(tracking, auth, run)
    response = await tracking.get("/api/v1/artifacts", headers=bearer(token))
    assert response.status_code == 200, response.text


async def test_resumed_run_accepts_its_tokens_again(
    tracking: httpx.AsyncClient, identity: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    token = await workload_token(identity, auth, pipeline_run_id=run["id"])
    # Only a failed (or paused) run resumes, as in the reference.
    path = f"/api/v1/runs/{run['id']}"
    assert (await tracking.put(path, json={"status": "failed"}, headers=auth)).is_success
    resumed = await tracking.put(
        f"/api/v1/runs/{run['id']}", json={"status": "resuming"}, headers=auth
    )
    assert resumed.json()["metadata"]["end_time"] is None
    response = await tracking.get("/api/v1/artifacts", headers=bearer(token))
    assert response.status_code == 200, response.text


async def test_deleted_run_refuses_its_tokens(
    tracking: httpx.AsyncClient, identity: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    token = await workload_token(identity, auth, pipeline_run_id=run["id"])
    assert (await tracking.delete(f"/api/v1/runs/{run['id']}", headers=auth)).status_code == 200
    response = await tracking.get("/api/v1/artifacts", headers=bearer(token))
    assert_refused(response, f"pipeline run {run['id']} does not exist")


async def test_deactivated_schedule_refuses_its_tokens_until_reactivated(
    tracking: httpx.AsyncClient, identity: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    schedule = await create_schedule(tracking, auth, default_project)
    token = await workload_token(identity, auth, schedule_id=schedule["id"])
    assert (await tracking.get("/api/v1/artifacts", headers=bearer(token))).status_code == 200
    await set_schedule_active(tracking, auth, schedule, False)
    response = await tracking.get("/api/v1/artifacts", headers=bearer(token))
    assert_refused(response, f"schedule {schedule['id']} is not active")
    await set_schedule_active(tracking, auth, schedule, True)
    assert (await tracking.get("/api/v1/artifacts", headers=bearer(token))).status_code == 200


async def test_deleted_deployment_refuses_its_tokens(
    tracking: httpx.AsyncClient, identity: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    deployment = await create_served_deployment(tracking, auth, default_project)
    token = await workload_token(identity, auth, deployment_id=deployment["id"])
    path = f"/api/v1/deployments/{deployment['id']}"
    assert (await tracking.get(path, headers=bearer(token))).status_code == 200
    assert (await tracking.delete(path, headers=auth)).status_code == 200
    response = await tracking.get("/api/v1/artifacts", headers=bearer(token))
    assert_refused(response, f"deployment {deployment['id']} does not exist")


async def test_scope_route_answers_each_kind_to_a_service(
    tracking: httpx.AsyncClient, identity: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    service = await service_headers(identity)
    run = await create_run(tracking, auth, default_project)
    schedule = await create_schedule(tracking, auth, default_project, active=False)
    deployment = await create_served_deployment(tracking, auth, default_project)
    answers = {
        kind: (await tracking.get(f"{SCOPES}/{kind}/{item['id']}", headers=service)).json()
        for kind, item in (
            ("pipeline_run", run),
            ("schedule", schedule),
            ("deployment", deployment),
        )
    }
    assert answers == {
        "pipeline_run": {
            "kind": "pipeline_run",
            "id": run["id"],
            "active": True,
            "usable": True,
            "root_run_id": run["id"],
        },
        "schedule": {
            "kind": "schedule",
            "id": schedule["id"],
            "active": False,
            "usable": False,
            "root_run_id": None,
        },
        "deployment": {
            "kind": "deployment",
            "id": deployment["id"],
            "active": True,
            "usable": True,
            "root_run_id": None,
        },
    }


async def test_scope_route_says_404_for_a_missing_object(
    tracking: httpx.AsyncClient, identity: httpx.AsyncClient
) -> None:
    missing = uuid.uuid4()
    response = await tracking.get(
        f"{SCOPES}/schedule/{missing}", headers=await service_headers(identity)
    )
    assert response.status_code == 404
    assert response.json()["detail"][0] == "KeyError"


@pytest.mark.parametrize("path", ["forever/{id}", "schedule/not-a-uuid"])
async def test_scope_route_says_422_for_a_bad_path(
    tracking: httpx.AsyncClient, identity: httpx.AsyncClient, path: str
) -> None:
    url = f"{SCOPES}/{path.format(id=uuid.uuid4())}"
    response = await tracking.get(url, headers=await service_headers(identity))
    assert response.status_code == 422


async def test_scope_route_is_for_services_only(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    response = await tracking.get(f"{SCOPES}/pipeline_run/{run['id']}", headers=auth)
    assert response.status_code == 401
    assert response.json()["detail"][0] == "AuthorizationException"
