"""A webhooks app per test on a real database and Redis, beside an in-process identity
(tokens, JWKS, users) and a real tracking app (projects, snapshot runs); tests of failing
snapshot-run requests use a stand-in for that one route (``snapshot_runs``).

The webhooks app runs on the ``database_url`` fixture; identity and tracking on
PostgreSQL databases of their own from the same pool.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr

from identity.app import create_app as create_identity_app
from shared.db import Clock, utcnow
from tests.identity.conftest import TRACKING_SECRET, WEBHOOKS_SECRET, bearer, make_settings
from tests.support.asgi import HostRouter, LifespanApp, running
from tests.support.databases import Databases
from tests.tracking import conftest as tracking_fixtures
from tests.tracking.conftest import tracking_settings_for
from tests.webhooks.support import SnapshotRuns
from tracking.app import create_app as create_tracking_app
from webhooks.app import create_app
from webhooks.settings import Settings
from webhooks.worker import create_worker

IDENTITY_URL = "http://identity"
TRACKING_URL = "http://tracking"
SERVER_API_URL = "https://platform.example/api/v1"
MEMBER_PASSWORD = "a long enough password"

# The admin's token from this module's identity app, as tracking's tests get theirs.
token = tracking_fixtures.token
auth = tracking_fixtures.auth


def webhooks_settings_for(
    database_url: str, redis_url: str, namespace: str, **overrides: Any
) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "redis_url": redis_url,
        "redis_namespace": namespace,
        "jwks_url": f"{IDENTITY_URL}/.well-known/jwks.json",
        "identity_url": IDENTITY_URL,
        "tracking_url": TRACKING_URL,
        "service_client_id": "webhooks",
        "service_client_secret": SecretStr(WEBHOOKS_SECRET),
        "webhook_secret_keys": SecretStr(Fernet.generate_key().decode()),
        "server_api_url": SERVER_API_URL,
        "environment": "test",
        "log_json": False,
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
async def identity_app(
    redis_url: str, redis_namespace: str, databases: Databases
) -> AsyncIterator[LifespanApp]:
    clients = {"tracking": SecretStr(TRACKING_SECRET), "webhooks": SecretStr(WEBHOOKS_SECRET)}
    async with databases.postgres("identity") as database_url:
        settings = make_settings(database_url, redis_url, redis_namespace, service_clients=clients)
        async with running(create_identity_app(settings)) as app:
            yield app


@pytest.fixture
async def tracking_app(
    tmp_path: Path,
    redis_url: str,
    redis_namespace: str,
    identity_app: LifespanApp,
    databases: Databases,
) -> AsyncIterator[LifespanApp]:
    async with databases.postgres("tracking") as database_url:
        settings = tracking_settings_for(
            database_url, redis_url, redis_namespace, tmp_path / "artifacts"
        )
        app = create_tracking_app(settings, http_transport=httpx.ASGITransport(app=identity_app))
        async with running(app) as started:
            yield started


@pytest.fixture
def router(identity_app: LifespanApp, tracking_app: LifespanApp) -> HostRouter:
    return HostRouter(
        {
            "identity/": httpx.ASGITransport(app=identity_app),
            "tracking/": httpx.ASGITransport(app=tracking_app),
        }
    )


@pytest.fixture
def snapshot_runs(router: HostRouter) -> SnapshotRuns:
    """Tracking's snapshot-run route replaced by a stand-in that can fail on demand (the
    tests of retries and refusals); other tests reach the real tracking app."""
    runs = SnapshotRuns()
    stand_in = {"tracking/api/v1/pipeline_snapshots": httpx.ASGITransport(app=runs.app())}
    router.routes = {**stand_in, **router.routes}
    return runs


@pytest.fixture
def database_service() -> str:
    """``database_url`` is at webhooks's head."""
    return "webhooks"


@pytest.fixture
def webhooks_settings(database_url: str, redis_url: str, redis_namespace: str) -> Settings:
    return webhooks_settings_for(database_url, redis_url, redis_namespace)


@pytest.fixture
async def webhooks_app(
    webhooks_settings: Settings, router: HostRouter
) -> AsyncIterator[LifespanApp]:
    async with running(create_app(webhooks_settings, http_transport=router)) as app:
        yield app


@pytest.fixture
async def client(webhooks_app: LifespanApp) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=webhooks_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


@pytest.fixture
async def project(tracking_app: LifespanApp, auth: dict[str, str]) -> dict[str, Any]:
    transport = httpx.ASGITransport(app=tracking_app)
    async with httpx.AsyncClient(transport=transport, base_url=TRACKING_URL) as tracking:
        response = await tracking.get("/api/v1/projects/default", headers=auth)
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


@pytest.fixture
def fast(webhooks_settings: Settings) -> Settings:
    """The settings with the worker's retries and polls quick."""
    return webhooks_settings.model_copy(
        update={
            "worker_retry_delay": timedelta(milliseconds=50),
            "worker_retry_max_delay": timedelta(milliseconds=200),
            "worker_poll_delay": timedelta(milliseconds=20),
        }
    )


@pytest.fixture
def drain(fast: Settings, router: HostRouter) -> Callable[..., Awaitable[None]]:
    """``await drain(**settings)``: run a burst worker until the queue is empty (``clock``:
    the one its retry horizon is judged by; ``jobs``: stop after starting that many)."""

    async def _drain(clock: Clock = utcnow, jobs: int = -1, **overrides: Any) -> None:
        settings = fast.model_copy(update=overrides)
        worker = create_worker(settings, http_transport=router, burst=True, clock=clock)
        worker.max_burst_jobs = jobs
        try:
            await worker.async_run()
        finally:
            with warnings.catch_warnings():
                # arq closes its pool with redis-py's deprecated close().
                warnings.filterwarnings("ignore", "Call to deprecated close", DeprecationWarning)
                await worker.close()

    return _drain


@pytest.fixture
def create_webhook(client: httpx.AsyncClient, auth: dict[str, str], project: dict[str, Any]):
    """``await create_webhook(webhook_type, name=…, secret=…)`` → the create answer."""

    async def _create(webhook_type: str = "codehost", **fields: Any) -> dict[str, Any]:
        body = {"project": project["id"], "name": f"hook-{webhook_type}", **fields}
        body["webhook_type"] = webhook_type
        response = await client.post("/api/v1/webhooks", json=body, headers=auth)
        assert response.status_code == 200, response.text
        created: dict[str, Any] = response.json()
        return created

    return _create


@pytest.fixture
async def wired(client, auth, create_webhook, project):
    """A codehost webhook with a trigger on pushes to main."""
    hook = await create_webhook("codehost")
    body = {
        "project": project["id"],
        "name": "main-pushes",
        "webhook_id": hook["id"],
        "snapshot_id": str(uuid.uuid4()),
        "configuration": {"target_events": [{"type": "push", "branch": "main"}]},
        "run_configuration": {"parameters": {"env": "prod"}},
    }
    response = await client.post("/api/v1/webhook_triggers", json=body, headers=auth)
    assert response.status_code == 200, response.text
    return hook, response.json()


@pytest.fixture
async def member_auth(identity_app, auth) -> dict[str, str]:
    """A token of a user who is not an admin."""
    transport = httpx.ASGITransport(app=identity_app)
    async with httpx.AsyncClient(transport=transport, base_url=IDENTITY_URL) as identity:
        user = {"name": "member", "is_admin": False, "password": MEMBER_PASSWORD, "active": True}
        created = await identity.post("/api/v1/users", json=user, headers=auth)
        assert created.status_code == 200, created.text
        login = await identity.post(
            "/api/v1/login", data={"username": "member", "password": MEMBER_PASSWORD}
        )
        assert login.status_code == 200, login.text
    return bearer(login.json()["access_token"])
