"""Workload tokens against real tracking objects: the objects, made through tracking's API,
and the tokens, asked from identity's ``/api/v1/api_token``.

Fixtures a test module imports: ``identity`` (a client of the identity app the tracking
fixtures start), and ``tracking_settings`` with the run ``leeway`` (none by default). A
module outside ``tests/tracking`` imports the tracking fixtures too.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers
from tests.tracking.conftest import IDENTITY_URL, tracking_settings_for
from tests.tracking.deployment.test_endpoints import create_deployer, create_deployment
from tests.tracking.pipeline_run.support import create_run, create_snapshot
from tests.tracking.schedule.test_endpoints import SCHEDULES, schedule_body
from tracking.settings import Settings

Json = dict[str, Any]
API_TOKEN = "/api/v1/api_token"


@pytest.fixture
def leeway() -> timedelta:
    """Tracking's workload token leeway after a run finished: none, so a finished run's
    tokens stop at once (tests parametrize it)."""
    return timedelta(0)


@pytest.fixture
def tracking_settings(
    database_url: str, redis_url: str, redis_namespace: str, tmp_path: Path, leeway: timedelta
) -> Settings:
    return tracking_settings_for(
        database_url,
        redis_url,
        redis_namespace,
        tmp_path / "artifacts",
        workload_token_expiration_leeway=leeway,
    )


@pytest.fixture
async def identity(identity_app: LifespanApp) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the identity app that tracking trusts."""
    transport = httpx.ASGITransport(app=identity_app)
    async with httpx.AsyncClient(transport=transport, base_url=IDENTITY_URL) as client:
        yield client


async def ask_workload_token(
    identity: httpx.AsyncClient, headers: Headers, **scope: str
) -> httpx.Response:
    return await identity.get(
        API_TOKEN, params={"token_type": "workload", **scope}, headers=headers
    )


async def workload_token(identity: httpx.AsyncClient, headers: Headers, **scope: str) -> str:
    """A workload token for ``scope`` (``pipeline_run_id=…`` …), asked with ``headers``."""
    response = await ask_workload_token(identity, headers, **scope)
    assert response.status_code == 200, response.text
    token: str = response.json()
    return token


def claims_of(token: str) -> dict[str, Any]:
    decoded: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    return decoded


async def create_schedule(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, *, active: bool = True
) -> Json:
    body = schedule_body(project, name=f"schedule-{uuid.uuid4().hex[:8]}", active=active)
    response = await tracking.post(SCHEDULES, json=body, headers=auth)
    assert response.status_code == 200, response.text
    created: Json = response.json()
    return created


async def create_served_deployment(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, name: str | None = None
) -> Json:
    name = name or f"serving-{uuid.uuid4().hex[:8]}"
    snapshot = await create_snapshot(tracking, auth, project)
    deployer = await create_deployer(tracking, auth, f"{name}-deployer")
    return await create_deployment(tracking, auth, project, name, snapshot, deployer)


async def create_scope_object(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, kind: str
) -> Json:
    """A new active schedule, running pipeline run or deployment (``kind`` as in
    ``<kind>_id``)."""
    if kind == "schedule":
        return await create_schedule(tracking, auth, project)
    if kind == "deployment":
        return await create_served_deployment(tracking, auth, project)
    return await create_run(tracking, auth, project)


async def finish_run(tracking: httpx.AsyncClient, auth: Headers, run: Json) -> Json:
    response = await tracking.put(
        f"/api/v1/runs/{run['id']}", json={"status": "completed"}, headers=auth
    )
    assert response.status_code == 200, response.text
    finished: Json = response.json()
    return finished


async def set_schedule_active(
    tracking: httpx.AsyncClient, auth: Headers, schedule: Json, active: bool
) -> None:
    response = await tracking.put(
        f"{SCHEDULES}/{schedule['id']}", json={"active": active}, headers=auth
    )
    assert response.status_code == 200, response.text
