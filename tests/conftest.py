"""Fixtures every test may use: a real Redis, real databases (SQLite, and PostgreSQL when
``TEST_DATABASE_URL`` is set) and unique Redis namespaces."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.databases import postgres_database, sqlite_url
from tests.support.redis_server import redis_for_tests

DATABASES = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with redis_for_tests() as url:
        yield url


@pytest.fixture
def redis_namespace() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=DATABASES)
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """Each database test runs on SQLite and, when TEST_DATABASE_URL is set, PostgreSQL."""
    if request.param == "sqlite":
        yield sqlite_url(tmp_path)
        return
    admin_url = os.environ.get("TEST_DATABASE_URL")
    if not admin_url:
        pytest.skip("TEST_DATABASE_URL is not set")
    async with postgres_database(admin_url) as url:
        yield url
