"""``GET /api/v1/api_token?token_type=workload`` against real tracking objects: which
object a token is bound to, who may re-scope, what is refused, and the token on identity.

Identity and tracking run in process and reach each other over HTTP (the tracking
fixtures, imported below).
"""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.identity.conftest import bearer
from tests.identity.device.support import device_id, device_login
from tests.tracking import conftest as tracking_fixtures
from tests.tracking.artifact.support import Headers
from tests.tracking.pipeline_run.support import create_run
from tests.tracking.workload_scope import support
from tests.tracking.workload_scope.support import (
    API_TOKEN,
    Json,
    ask_workload_token,
    claims_of,
    create_schedule,
    create_scope_object,
    finish_run,
    workload_token,
)

# Identity and tracking as the tracking tests start them (identity's own tests use another
# identity_app, which knows no tracking).
database_service = tracking_fixtures.database_service  # database_url is tracking's
router = tracking_fixtures.router
identity_app = tracking_fixtures.identity_app
tracking_app = tracking_fixtures.tracking_app
tracking = tracking_fixtures.tracking
token = tracking_fixtures.token
auth = tracking_fixtures.auth
default_project = tracking_fixtures.default_project
identity = support.identity
leeway = support.leeway
tracking_settings = support.tracking_settings


def assert_error(response: httpx.Response, status: int, name: str, message: str) -> None:
    assert response.status_code == status, response.text
    assert response.json() == {"detail": [name, message]}


async def test_run_token_is_bound_to_the_run_and_never_expires(
    identity: httpx.AsyncClient, tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    response = await ask_workload_token(identity, auth, pipeline_run_id=run["id"])
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    claims = claims_of(response.json())
    assert claims["kind"] == "workload"
    assert claims["pipeline_run_id"] == run["id"]
    assert "exp" not in claims
    assert not {"schedule_id", "deployment_id"} & claims.keys()
    me = await identity.get("/api/v1/current-user", headers=bearer(response.json()))
    assert me.status_code == 200, me.text


@pytest.mark.parametrize("kind", ["schedule", "deployment"])
async def test_schedule_and_deployment_tokens_are_bound_to_them(
    identity: httpx.AsyncClient,
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    kind: str,
) -> None:
    item = await create_scope_object(tracking, auth, default_project, kind)
    claims = claims_of(await workload_token(identity, auth, **{f"{kind}_id": item["id"]}))
    assert claims[f"{kind}_id"] == item["id"]
    assert "exp" not in claims


async def test_expires_in_bounds_a_workload_token(
    identity: httpx.AsyncClient, tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    token = await workload_token(identity, auth, pipeline_run_id=run["id"], expires_in="600")
    claims = claims_of(token)
    assert claims["exp"] == pytest.approx(claims["iat"] + 600, abs=2)


@pytest.mark.parametrize("expires_in", ["604801", str(10**20)])
async def test_expires_in_above_the_generic_maximum_is_400(
    identity: httpx.AsyncClient,
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    expires_in: str,
) -> None:
    run = await create_run(tracking, auth, default_project)
    response = await ask_workload_token(
        identity, auth, pipeline_run_id=run["id"], expires_in=expires_in
    )
    assert_error(
        response,
        400,
        "ValueError",
        "The maximum expiration time for workload API tokens allowed by this server is "
        "604800 seconds.",
    )


async def test_no_scope_is_400(identity: httpx.AsyncClient, auth: Headers) -> None:
    assert_error(
        await ask_workload_token(identity, auth),
        400,
        "ValueError",
        "Workload API tokens must be scoped to a schedule, pipeline run or deployment.",
    )


async def test_more_than_one_scope_is_400(
    identity: httpx.AsyncClient, tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    schedule = await create_schedule(tracking, auth, default_project)
    response = await ask_workload_token(
        identity, auth, pipeline_run_id=run["id"], schedule_id=schedule["id"]
    )
    assert_error(
        response,
        400,
        "ValueError",
        "Workload API tokens must be scoped to exactly one schedule, pipeline run or deployment.",
    )


async def test_a_scope_that_is_not_a_uuid_is_422(
    identity: httpx.AsyncClient, auth: Headers
) -> None:
    response = await ask_workload_token(identity, auth, schedule_id="nightly")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "schedule_id"]


@pytest.mark.parametrize(
    ("kind", "noun"),
    [("schedule", "schedules"), ("pipeline_run", "pipeline runs"), ("deployment", "deployments")],
)
async def test_missing_object_is_400(
    identity: httpx.AsyncClient, auth: Headers, tracking: httpx.AsyncClient, kind: str, noun: str
) -> None:
    missing = uuid.uuid4()
    label = kind.replace("_", " ").capitalize()
    assert_error(
        await ask_workload_token(identity, auth, **{f"{kind}_id": str(missing)}),
        400,
        "ValueError",
        f"{label} {missing} does not exist and API tokens cannot be generated for "
        f"non-existent {noun} for security reasons.",
    )


async def test_finished_run_gets_no_token(
    identity: httpx.AsyncClient, tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project, status="completed")
    assert_error(
        await ask_workload_token(identity, auth, pipeline_run_id=run["id"]),
        400,
        "ValueError",
        f"The execution of pipeline run {run['id']} has already concluded and API tokens "
        "can no longer be generated for it for security reasons.",
    )


async def test_inactive_schedule_gets_no_token(
    identity: httpx.AsyncClient, tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    schedule = await create_schedule(tracking, auth, default_project, active=False)
    assert_error(
        await ask_workload_token(identity, auth, schedule_id=schedule["id"]),
        400,
        "ValueError",
        f"Schedule {schedule['id']} is not active and API tokens cannot be generated for "
        "inactive schedules for security reasons.",
    )


async def test_workload_token_inherits_its_scope(
    identity: httpx.AsyncClient, tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    schedule = await create_schedule(tracking, auth, default_project)
    first = await workload_token(identity, auth, schedule_id=schedule["id"])
    second = await workload_token(identity, bearer(first))
    assert claims_of(second)["schedule_id"] == schedule["id"]
    third = await workload_token(identity, bearer(second), schedule_id=schedule["id"])
    assert claims_of(third)["schedule_id"] == schedule["id"]


@pytest.mark.parametrize("kind", ["schedule", "deployment"])
async def test_workload_token_cannot_move_to_another_schedule_or_deployment(
    identity: httpx.AsyncClient,
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    kind: str,
) -> None:
    held, other = [await create_scope_object(tracking, auth, default_project, kind) for _ in "ab"]
    token = await workload_token(identity, auth, **{f"{kind}_id": held["id"]})
    response = await ask_workload_token(identity, bearer(token), **{f"{kind}_id": other["id"]})
    assert_error(
        response,
        401,
        "AuthorizationException",
        f"Unable to scope API token to {kind} {other['id']}. The token used to authorize "
        f"this request is already scoped to {kind} {held['id']}.",
    )


async def test_run_token_cannot_move_to_a_run_it_is_not_the_root_of(
    identity: httpx.AsyncClient, tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    held, other = [await create_run(tracking, auth, default_project) for _ in "ab"]
    token = await workload_token(identity, auth, pipeline_run_id=held["id"])
    response = await ask_workload_token(identity, bearer(token), pipeline_run_id=other["id"])
    assert_error(
        response,
        401,
        "AuthorizationException",
        f"Unable to scope API token to pipeline run {other['id']}. The token used to "
        f"authorize this request is already scoped to pipeline run {held['id']}.",
    )


async def test_workload_token_cannot_change_the_kind_of_its_object(
    identity: httpx.AsyncClient, tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    schedule = await create_schedule(tracking, auth, default_project)
    run = await create_run(tracking, auth, default_project)
    token = await workload_token(identity, auth, schedule_id=schedule["id"])
    response = await ask_workload_token(identity, bearer(token), pipeline_run_id=run["id"])
    assert response.status_code == 401
    assert response.json()["detail"][0] == "AuthorizationException"


async def test_workload_token_cannot_obtain_a_generic_token(
    identity: httpx.AsyncClient, tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    """The reference hands out a generic token without the scope (it outlives the run);
    we refuse, so no unscoped token comes out of a workload token."""
    run = await create_run(tracking, auth, default_project)
    token = await workload_token(identity, auth, pipeline_run_id=run["id"])
    response = await identity.get(API_TOKEN, headers=bearer(token))
    assert response.status_code == 401
    assert response.json()["detail"][0] == "AuthorizationException"


async def test_generic_token_of_a_user_carries_no_scope(
    identity: httpx.AsyncClient, auth: Headers
) -> None:
    claims = claims_of((await identity.get(API_TOKEN, headers=auth)).json())
    assert claims["kind"] == "generic"
    assert not {"schedule_id", "pipeline_run_id", "deployment_id"} & claims.keys()


async def test_workload_token_of_a_device_dies_with_the_device(
    identity: httpx.AsyncClient,
    tracking: httpx.AsyncClient,
    token: str,
    auth: Headers,
    default_project: Json,
) -> None:
    run = await create_run(tracking, auth, default_project)
    authorization, redeemed = await device_login(identity, token)
    device_token = bearer(redeemed.json()["access_token"])
    workload = await workload_token(identity, device_token, pipeline_run_id=run["id"])
    assert claims_of(workload)["device_id"] == device_id(authorization)
    await identity.delete(f"/api/v1/devices/{device_id(authorization)}", headers=auth)
    response = await tracking.get(f"/api/v1/runs/{run['id']}", headers=bearer(workload))
    assert response.status_code == 401


async def test_workload_token_stops_working_on_identity_when_its_run_finishes(
    identity: httpx.AsyncClient, tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    token = await workload_token(identity, auth, pipeline_run_id=run["id"])
    await finish_run(tracking, auth, run)
    response = await identity.get("/api/v1/current-user", headers=bearer(token))
    assert_error(
        response,
        401,
        "CredentialsNotValid",
        f"Authentication error: pipeline run {run['id']} has finished and API tokens "
        "scoped to it are no longer valid",
    )
    again = await ask_workload_token(identity, bearer(token))
    assert again.status_code == 401


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/users"),
        ("POST", "/api/v1/users"),
        ("GET", "/api/v1/users/default"),
        ("PUT", "/api/v1/users/default"),
        ("PUT", "/api/v1/current-user"),
        ("GET", "/api/v1/devices"),
        ("DELETE", "/api/v1/devices/{id}"),
    ],
)
async def test_workload_token_may_not_manage_identity(
    identity: httpx.AsyncClient,
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    method: str,
    path: str,
) -> None:
    """The default admin's own workload token: it carries ``admin``, and still may not."""
    run = await create_run(tracking, auth, default_project)
    token = await workload_token(identity, auth, pipeline_run_id=run["id"])
    body = {"name": "intruder", "password": "a long enough password", "is_admin": False}
    response = await identity.request(
        method,
        path.format(id=uuid.uuid4()),
        json=body if method in ("POST", "PUT") else None,
        headers=bearer(token),
    )
    assert response.status_code == 401, response.text
    assert response.json()["detail"] == [
        "AuthorizationException",
        "A workload token may not be used for this operation.",
    ]
