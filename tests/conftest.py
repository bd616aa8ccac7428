"""Fixtures every test may use: a real Redis, real PostgreSQL databases (the server of
``TEST_DATABASE_URL`` when set, else an embedded one) and unique Redis namespaces."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.databases import Databases
from tests.support.postgres_server import postgres_for_tests
from tests.support.processes import stack_databases
from tests.support.redis_server import redis_for_tests
from tests.support.tracing import recording


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with redis_for_tests() as url:
        yield url


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on for the test (:mod:`shared.tracing`), its spans kept in memory."""
    with recording() as exporter:
        yield exporter


@pytest.fixture
def redis_namespace() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def databases() -> Iterator[Databases]:
    """This test process's databases (see :mod:`tests.support.databases`)."""
    with postgres_for_tests() as admin_url:
        pool = Databases(admin_url)
        asyncio.run(pool.drop_abandoned())
        yield pool
        asyncio.run(pool.aclose())


@pytest.fixture(scope="module")
async def databases_of_stack(databases: Databases) -> AsyncIterator[dict[str, str]]:
    """A module's stack's databases on the tests' server, each at its service's head
    (faster than the embedded server a stack starts without them, and than migrating at
    start); only the embedded server's own test and the migrations' own run without."""
    async with stack_databases(databases) as urls:
        yield urls


@pytest.fixture
def database_service() -> str | None:
    """The service whose migrations ``database_url`` is at: none here (an empty database);
    each service's tests name theirs."""
    return None


@pytest.fixture
async def database_url(databases: Databases, database_service: str | None) -> AsyncIterator[str]:
    """A PostgreSQL database of the test's own, at ``database_service``'s head."""
    async with databases.postgres(database_service) as url:
        yield url
