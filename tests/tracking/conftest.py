"""A tracking app per test on a real database and Redis, with an in-process identity app
that issues its tokens, serves its JWKS and answers its user look-ups.

Identity has a PostgreSQL database of its own from the pool (it is an outside service
here); tracking runs on the ``database_url`` fixture. The two reach each other through
one :class:`HostRouter`; neither caches workload scopes (``workload_scope_cache_ttl`` 0),
so a run finished is seen at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr

from identity.app import create_app as create_identity_app
from tests.identity.conftest import (
    ADMIN,
    ADMIN_PASSWORD,
    TRACKING_SECRET,
    WEBHOOKS_SECRET,
    bearer,
    make_settings,
)
from tests.support.asgi import HostRouter, LifespanApp, running
from tests.support.databases import Databases
from tests.support.s3_server import S3Server, s3_server
from tracking.app import create_app
from tracking.settings import Settings
from tracking.store.egress import AddressPolicy, EgressProxy

IDENTITY_URL = "http://identity"
TRACKING_URL = "http://tracking"
COMPONENT_SECRET_KEYS = Fernet.generate_key().decode()
LOOPBACK = [IPv4Network("127.0.0.0/8")]


def tracking_settings_for(
    database_url: str, redis_url: str, namespace: str, artifact_root: Path, **overrides: Any
) -> Settings:
    """Settings for a tracking app that reaches identity at :data:`IDENTITY_URL`."""
    values: dict[str, Any] = {
        "database_url": database_url,
        "redis_url": redis_url,
        "redis_namespace": namespace,
        "jwks_url": f"{IDENTITY_URL}/.well-known/jwks.json",
        "identity_url": IDENTITY_URL,
        "service_client_id": "tracking",
        "service_client_secret": SecretStr(TRACKING_SECRET),
        "artifact_store_root": artifact_root,
        "component_secret_keys": SecretStr(COMPONENT_SECRET_KEYS),
        # A store that does not answer fails fast.
        "artifact_store_connect_timeout": timedelta(seconds=2),
        "artifact_store_retries": 1,
        # The tests' S3 server listens on loopback, which user stores may not reach.
        "artifact_store_allowed_networks": LOOPBACK,
        "workload_scope_cache_ttl": timedelta(0),
        "environment": "test",
        "log_json": False,
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    """An S3-compatible server of this test process (buckets: one per test)."""
    with s3_server() as server:
        yield server


@pytest.fixture(scope="session")
async def egress() -> AsyncIterator[EgressProxy]:
    """The proxy S3 clients of store-level tests connect through, letting them reach the
    tests' S3 server on loopback (as the apps' settings do with
    ``artifact_store_allowed_networks``)."""
    proxy = EgressProxy(AddressPolicy(LOOPBACK), connect_timeout=2.0)
    await proxy.start()
    yield proxy
    await proxy.close()


@pytest.fixture
def router() -> HostRouter:
    """How identity and tracking reach each other (tracking's users, identity's workload
    scopes)."""
    return HostRouter()


@pytest.fixture
async def identity_app(
    redis_url: str,
    redis_namespace: str,
    router: HostRouter,
    databases: Databases,
) -> AsyncIterator[LifespanApp]:
    # The webhooks service's client too: its service token requests snapshot runs.
    clients = {"tracking": SecretStr(TRACKING_SECRET), "webhooks": SecretStr(WEBHOOKS_SECRET)}
    async with databases.postgres("identity") as database_url:
        settings = make_settings(
            database_url,
            redis_url,
            redis_namespace,
            tracking_url=TRACKING_URL,
            workload_scope_cache_ttl=timedelta(0),
            service_clients=clients,
        )
        async with running(create_identity_app(settings, http_transport=router)) as app:
            router.register("identity/", app)
            yield app


@pytest.fixture
def database_service() -> str:
    """``database_url`` is at tracking's head."""
    return "tracking"


@pytest.fixture
def tracking_settings(
    database_url: str, redis_url: str, redis_namespace: str, tmp_path: Path
) -> Settings:
    return tracking_settings_for(database_url, redis_url, redis_namespace, tmp_path / "artifacts")


@pytest.fixture
async def tracking_app(
    tracking_settings: Settings, identity_app: LifespanApp, router: HostRouter
) -> AsyncIterator[LifespanApp]:
    app = create_app(tracking_settings, http_transport=router)
    async with running(app) as started:
        router.register("tracking/", started)
        yield started


@pytest.fixture
async def keyless_tracking(
    tracking_settings: Settings, identity_app: LifespanApp, router: HostRouter
) -> AsyncIterator[httpx.AsyncClient]:
    """A tracking app without COMPONENT_SECRET_KEYS."""
    settings = tracking_settings.model_copy(update={"component_secret_keys": None})
    async with running(create_app(settings, http_transport=router)) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client


@pytest.fixture
async def tracking(tracking_app: LifespanApp) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=tracking_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


@pytest.fixture
async def token(identity_app: LifespanApp) -> str:
    """An access token of identity's default admin."""
    transport = httpx.ASGITransport(app=identity_app)
    async with httpx.AsyncClient(transport=transport, base_url=IDENTITY_URL) as client:
        response = await client.post(
            "/api/v1/login", data={"username": ADMIN, "password": ADMIN_PASSWORD}
        )
        assert response.status_code == 200, response.text
        client.cookies.clear()
    access_token: str = response.json()["access_token"]
    return access_token


@pytest.fixture
def auth(token: str) -> dict[str, str]:
    return bearer(token)


@pytest.fixture
async def default_project(tracking: httpx.AsyncClient, auth: dict[str, str]) -> dict[str, Any]:
    response = await tracking.get("/api/v1/projects/default", headers=auth)
    assert response.status_code == 200, response.text
    project: dict[str, Any] = response.json()
    return project
