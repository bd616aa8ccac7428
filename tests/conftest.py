"""Fixtures every test may use: a real Redis, real databases (SQLite, and PostgreSQL when
``TEST_DATABASE_URL`` is set) and unique Redis namespaces."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.databases import Databases
from tests.support.redis_server import redis_for_tests

DATABASES = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with redis_for_tests() as url:
        yield url


@pytest.fixture
def redis_namespace() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Databases]:
    """This test process's databases (see :mod:`tests.support.databases`)."""
    pool = Databases(tmp_path_factory.mktemp("databases"), os.environ.get("TEST_DATABASE_URL"))
    if pool.admin_url is not None:
        asyncio.run(pool.drop_abandoned())
    yield pool
    asyncio.run(pool.aclose())


@pytest.fixture
def database_service() -> str | None:
    """The service whose migrations ``database_url`` is at: none here (an empty database);
    each service's tests name theirs."""
    return None


@pytest.fixture(params=DATABASES)
async def database_url(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    databases: Databases,
    database_service: str | None,
) -> AsyncIterator[str]:
    """Each database test runs on SQLite and, when TEST_DATABASE_URL is set, PostgreSQL:
    a database of its own, at ``database_service``'s head."""
    if request.param == "sqlite":
        yield await databases.sqlite(tmp_path, database_service)
        return
    if databases.admin_url is None:
        pytest.skip("TEST_DATABASE_URL is not set")
    async with databases.postgres(database_service) as url:
        yield url
