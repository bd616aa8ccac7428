"""``POST /api/v1/pipeline_snapshots/{id}/runs``: a run of a snapshot, asked by a user or by
the webhooks service for a trigger execution (one run per execution, however often asked)."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from typing import Any

import httpx
import pytest

from tests.identity.conftest import TRACKING_SECRET, WEBHOOKS_SECRET, bearer
from tests.tracking.artifact.support import Headers
from tests.tracking.pipeline_run.support import create_pipeline, create_run, default_stack_id
from tests.tracking.workload_scope import support
from tests.tracking.workload_scope.support import workload_token

identity = support.identity
Json = dict[str, Any]


async def service_auth(identity: httpx.AsyncClient, client_id: str, secret: str) -> Headers:
    response = await identity.post(
        "/api/v1/login",
        data={"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret},
    )
    assert response.status_code == 200, response.text
    return bearer(response.json()["access_token"])


@pytest.fixture
async def webhooks_auth(identity: httpx.AsyncClient) -> Headers:
    return await service_auth(identity, "webhooks", WEBHOOKS_SECRET)


async def snapshot_with(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, template: str, **config: Any
) -> Json:
    pipeline = await create_pipeline(tracking, auth, project, uuid.uuid4().hex[:8])
    body = {
        "project": project["id"],
        "run_name_template": template,
        "pipeline_configuration": {"name": pipeline["name"], **config},
        "stack": await default_stack_id(tracking, auth),
        "pipeline": pipeline["id"],
    }
    response = await tracking.post("/api/v1/pipeline_snapshots", json=body, headers=auth)
    assert response.status_code == 200, response.text
    created: Json = response.json()
    return created


def trigger_execution(execution_id: uuid.UUID | None = None, **event: Any) -> Json:
    return {
        "id": str(execution_id or uuid.uuid4()),
        "trigger_id": str(uuid.uuid4()),
        "webhook_upstream_event": {
            "codehost": {
                "webhook_id": "6f1c7a55-2b0e-4c1e-9d55-0b9d3e6a1f00",
                "delivery_id": "d-1",
                "event_type": "push",
                "event": event or {"type": "push", "branch": "main"},
            }
        },
    }


def runs_of(snapshot: Json) -> str:
    return f"/api/v1/pipeline_snapshots/{snapshot['id']}/runs"


async def test_a_user_runs_a_snapshot_named_by_its_template_in_the_initial_status(
    tracking, auth, default_project
):
    snapshot = await snapshot_with(
        tracking, auth, default_project, "{pipeline}-{date}-{time}", substitutions={"pipeline": "p"}
    )
    before = dt.datetime.now(dt.UTC)
    response = await tracking.post(runs_of(snapshot), json={}, headers=auth)
    assert response.status_code == 200, response.text
    run = response.json()
    assert run["body"]["status"] == "initializing"
    assert run["body"]["in_progress"] is True
    assert run["body"]["index"] == 1
    assert run["name"].startswith(f"p-{before:%Y_%m_%d}-")
    assert run["resources"]["snapshot"]["id"] == snapshot["id"]
    assert run["resources"]["user"]["name"] == "default"
    assert run["metadata"]["trigger_execution_info"] is None
    assert run["metadata"]["start_time"] is not None
    got = await tracking.get(f"/api/v1/runs/{run['id']}", headers=auth)
    assert got.json() == run
    again = await tracking.post(runs_of(snapshot), json={}, headers=auth)
    assert again.json()["id"] != run["id"]  # no trigger execution: a new run each time
    assert again.json()["body"]["index"] == 2


async def test_the_webhooks_service_gets_one_run_per_trigger_execution(
    tracking, auth, webhooks_auth, default_project
):
    snapshot = await snapshot_with(tracking, auth, default_project, "hook-{date}-{time}")
    execution = trigger_execution()
    body = {"run_configuration": {"settings": {}}, "trigger_execution": execution}
    first = await tracking.post(runs_of(snapshot), json=body, headers=webhooks_auth)
    assert first.status_code == 200, first.text
    run = first.json()
    assert run["resources"]["user"] is None  # run by a service, for the trigger
    assert run["metadata"]["trigger_execution_info"] == {
        "upstream_run_id": None,
        "upstream_pipeline_ids": [],
        "webhook_upstream_event": execution["webhook_upstream_event"],
    }
    second = await tracking.post(runs_of(snapshot), json=body, headers=webhooks_auth)
    assert second.status_code == 200, second.text
    assert second.json()["id"] == run["id"]
    listed = await tracking.get(
        "/api/v1/runs", params={"snapshot_id": snapshot["id"]}, headers=auth
    )
    assert listed.json()["total"] == 1


async def test_concurrent_requests_of_one_trigger_execution_make_one_run(
    tracking, auth, webhooks_auth, default_project
):
    snapshot = await snapshot_with(tracking, auth, default_project, "hook-{date}-{time}")
    body = {"trigger_execution": trigger_execution()}
    answers = await asyncio.gather(
        *(tracking.post(runs_of(snapshot), json=body, headers=webhooks_auth) for _ in range(5))
    )
    assert [a.status_code for a in answers] == [200] * 5, [a.text for a in answers]
    assert len({a.json()["id"] for a in answers}) == 1
    listed = await tracking.get(
        "/api/v1/runs", params={"snapshot_id": snapshot["id"]}, headers=auth
    )
    assert listed.json()["total"] == 1


async def test_a_trigger_execution_that_ran_another_snapshot_is_409(
    tracking, auth, webhooks_auth, default_project
):
    one = await snapshot_with(tracking, auth, default_project, "a-{date}-{time}")
    other = await snapshot_with(tracking, auth, default_project, "b-{date}-{time}")
    body = {"trigger_execution": trigger_execution()}
    assert (await tracking.post(runs_of(one), json=body, headers=webhooks_auth)).status_code == 200
    response = await tracking.post(runs_of(other), json=body, headers=webhooks_auth)
    assert response.status_code == 409
    assert response.json()["detail"][0] == "EntityExistsError"


async def test_an_unknown_snapshot_is_404_and_a_bad_id_or_body_422(tracking, auth):
    unknown = f"/api/v1/pipeline_snapshots/{uuid.uuid4()}/runs"
    response = await tracking.post(unknown, json={}, headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"][0] == "KeyError"
    bad_id = await tracking.post("/api/v1/pipeline_snapshots/nope/runs", json={}, headers=auth)
    assert bad_id.status_code == 422
    no_execution_id = {"trigger_execution": {"webhook_upstream_event": None}}
    bad_body = await tracking.post(unknown, json=no_execution_id, headers=auth)
    assert bad_body.status_code == 422


async def test_a_template_that_cannot_be_filled_in_is_400(tracking, auth, default_project):
    snapshot = await snapshot_with(tracking, auth, default_project, "run-{unknown}")
    response = await tracking.post(runs_of(snapshot), json={}, headers=auth)
    assert response.status_code == 400
    assert "cannot be filled in" in response.json()["detail"][1]


async def test_a_static_run_name_taken_is_409(tracking, auth, default_project):
    snapshot = await snapshot_with(tracking, auth, default_project, f"fixed-{uuid.uuid4().hex}")
    assert (await tracking.post(runs_of(snapshot), json={}, headers=auth)).status_code == 200
    response = await tracking.post(runs_of(snapshot), json={}, headers=auth)
    assert response.status_code == 409


async def test_other_services_workload_tokens_and_anonymous_callers_may_not(
    tracking, identity, auth, default_project
):
    snapshot = await snapshot_with(tracking, auth, default_project, "x-{date}-{time}")
    tracking_itself = await service_auth(identity, "tracking", TRACKING_SECRET)
    refused = await tracking.post(runs_of(snapshot), json={}, headers=tracking_itself)
    assert refused.status_code == 401
    assert refused.json()["detail"][0] == "AuthorizationException"
    run = await create_run(tracking, auth, default_project)
    token = await workload_token(identity, auth, pipeline_run_id=run["id"])
    by_workload = await tracking.post(runs_of(snapshot), json={}, headers=bearer(token))
    assert by_workload.status_code == 401
    anonymous = await tracking.post(runs_of(snapshot), json={})
    assert anonymous.status_code == 401


async def test_the_run_statistics_group_runs_by_the_trigger_that_asked(
    tracking, auth, webhooks_auth, default_project
):
    snapshot = await snapshot_with(tracking, auth, default_project, "hook-{date}-{time}")
    execution = trigger_execution()
    for body in ({"trigger_execution": execution}, {"trigger_execution": trigger_execution()}):
        body["trigger_execution"]["trigger_id"] = execution["trigger_id"]
        response = await tracking.post(runs_of(snapshot), json=body, headers=webhooks_auth)
        assert response.status_code == 200, response.text
    assert (await tracking.post(runs_of(snapshot), json={}, headers=auth)).status_code == 200
    asked = {
        "filter": {"project": default_project["id"], "snapshot_id": snapshot["id"]},
        "groupings": [{"name": "trigger", "type": "trigger"}],
    }
    response = await tracking.post("/api/v1/runs/statistics", json=asked, headers=auth)
    assert response.status_code == 200, response.text
    assert response.json()["groups"] == [
        {"group_keys": {"trigger": execution["trigger_id"]}, "metrics": {}, "run_count": 2},
        {"group_keys": {"trigger": None}, "metrics": {}, "run_count": 1},
    ]
