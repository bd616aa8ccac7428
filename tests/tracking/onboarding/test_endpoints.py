"""``GET /internal/v1/onboarding_state``: the checklist's steps tracking's data shows, each
appearing as its data appears; for services only."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest

from shared.db import SessionMaker, create_engine, create_sessionmaker, session_scope
from shared.onboarding import ONBOARDING_PATH
from tests.identity.conftest import bearer, tracking_service_token
from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers
from tests.tracking.component.support import create_component
from tests.tracking.component.test_s3_flavor import post_s3, s3_configuration
from tests.tracking.pipeline_run.support import create_run, create_snapshot, run_of_snapshot
from tests.tracking.workload_scope import support
from tests.tracking.workload_scope.support import Json, create_served_deployment, finish_run
from tracking.models import Stack, StackComponent, StackComposition
from tracking.onboarding.service import OnboardingService

identity = support.identity

DEFAULT = ["project_created"]


@pytest.fixture
async def service(identity: httpx.AsyncClient) -> Headers:
    return bearer(await tracking_service_token(identity))


async def steps(tracking: httpx.AsyncClient, service: Headers) -> list[str]:
    response = await tracking.get(ONBOARDING_PATH, headers=service)
    assert response.status_code == 200, response.text
    found: list[str] = response.json()
    return found


async def stack_run_by(tracking_app: LifespanApp, flavor: str) -> Json:
    """A stack whose orchestrator is of ``flavor``, stored as the reference would keep it
    (this server's API knows no orchestrator flavor but ``local``)."""
    name = f"{flavor}-{uuid.uuid4().hex[:8]}"
    runner = StackComponent(name=name, type="orchestrator", flavor=flavor)
    stack = Stack(name=name)
    async with session_scope(tracking_app.state["sessionmaker"]) as session:
        session.add_all([runner, stack])
        await session.flush()
        session.add(StackComposition(stack_id=stack.id, component_id=runner.id))
    return {"id": str(stack.id)}


async def s3_store(tracking: httpx.AsyncClient, auth: Headers) -> str:
    name = f"s3-{uuid.uuid4().hex[:8]}"
    response = await post_s3(tracking, auth, s3_configuration(), name=name)
    assert response.status_code == 200, response.text
    component_id: str = response.json()["id"]
    return component_id


async def create_stack(
    tracking: httpx.AsyncClient,
    auth: Headers,
    *,
    store: str | None = None,
    runner: str | None = None,
) -> Json:
    """A stack of ``store`` and ``runner`` (component ids; new local ones when left out)."""
    name = f"stack-{uuid.uuid4().hex[:8]}"
    if store is None:
        store = (await create_component(tracking, auth, f"{name}-store"))["id"]
    if runner is None:
        runner = (await create_component(tracking, auth, f"{name}-runner", "orchestrator"))["id"]
    body = {"name": name, "components": {"artifact_store": [store], "orchestrator": [runner]}}
    response = await tracking.post("/api/v1/stacks", json=body, headers=auth)
    assert response.status_code == 200, response.text
    stack: Json = response.json()
    return stack


async def run_on(tracking: httpx.AsyncClient, auth: Headers, project: Json, stack: Json) -> Json:
    """A running run of a snapshot on ``stack``."""
    snapshot = await create_snapshot(tracking, auth, project, stack=stack["id"])
    run: Json = (await run_of_snapshot(tracking, auth, project, snapshot)).json()[0]
    return run


@pytest.fixture
async def empty_database(database_url: str) -> AsyncIterator[SessionMaker]:
    """Tracking's database at its head, without the defaults an app makes at its start."""
    engine = create_engine(database_url, pool_size=1)
    yield create_sessionmaker(engine)
    await engine.dispose()


async def test_an_empty_database_shows_no_step(empty_database: SessionMaker) -> None:
    async with session_scope(empty_database) as session:
        assert await OnboardingService(session).completed() == []


async def test_a_new_server_shows_its_default_project(
    tracking: httpx.AsyncClient, service: Headers
) -> None:
    assert await steps(tracking, service) == DEFAULT


async def test_a_stack_with_a_remote_artifact_store_shows_its_step(
    tracking: httpx.AsyncClient, auth: Headers, service: Headers
) -> None:
    store = await s3_store(tracking, auth)
    assert await steps(tracking, service) == DEFAULT, "a component alone is no stack"
    await create_stack(tracking, auth, store=store)
    assert await steps(tracking, service) == [*DEFAULT, "stack_with_remote_artifact_store_created"]


async def test_a_stack_with_a_remote_orchestrator_shows_its_step(
    tracking: httpx.AsyncClient, tracking_app: LifespanApp, auth: Headers, service: Headers
) -> None:
    await stack_run_by(tracking_app, "kubernetes")
    assert await steps(tracking, service) == [*DEFAULT, "stack_with_remote_orchestrator_created"]


async def test_a_local_docker_orchestrator_is_not_remote(
    tracking: httpx.AsyncClient, tracking_app: LifespanApp, auth: Headers, service: Headers
) -> None:
    await stack_run_by(tracking_app, "local_docker")
    assert await steps(tracking, service) == DEFAULT


async def test_a_run_shows_its_step_once_finished(
    tracking: httpx.AsyncClient, auth: Headers, service: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    assert await steps(tracking, service) == DEFAULT
    await finish_run(tracking, auth, run)
    assert await steps(tracking, service) == [*DEFAULT, "pipeline_run"]


async def test_a_run_finished_on_a_remote_stack_shows_the_remote_run_steps(
    tracking: httpx.AsyncClient,
    tracking_app: LifespanApp,
    auth: Headers,
    service: Headers,
    default_project: Json,
) -> None:
    remote_store = await create_stack(tracking, auth, store=await s3_store(tracking, auth))
    remote_runner = await stack_run_by(tracking_app, "kubernetes")
    stacks = ["stack_with_remote_orchestrator_created", "stack_with_remote_artifact_store_created"]
    running = await run_on(tracking, auth, default_project, remote_store)
    assert await steps(tracking, service) == [*DEFAULT, *stacks], "a running run shows nothing"
    await finish_run(tracking, auth, running)
    assert await steps(tracking, service) == [
        *DEFAULT,
        "pipeline_run",
        *stacks,
        "pipeline_run_with_remote_artifact_store",
    ]
    await finish_run(tracking, auth, await run_on(tracking, auth, default_project, remote_runner))
    assert await steps(tracking, service) == [
        *DEFAULT,
        "pipeline_run",
        *stacks,
        "pipeline_run_with_remote_orchestrator",
        "pipeline_run_with_remote_artifact_store",
    ]


async def test_a_deployment_completes_the_onboarding(
    tracking: httpx.AsyncClient, auth: Headers, service: Headers, default_project: Json
) -> None:
    await create_served_deployment(tracking, auth, default_project)
    assert await steps(tracking, service) == [
        *DEFAULT,
        "pipeline_deployed",
        "oss_onboarding_completed",
        "pro_onboarding_completed",
    ]


async def test_a_user_token_is_refused(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.get(ONBOARDING_PATH, headers=auth)
    assert response.status_code == 401
    assert response.json()["detail"][0] == "AuthorizationException"
