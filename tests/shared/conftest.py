"""Fixtures for the shared library's tests (``redis_url`` and ``redis_namespace`` come from
``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from shared.redis import create_redis
from shared.redis_pipe import close_pipe_of


@pytest.fixture
async def redis_client(redis_url: str, redis_namespace: str) -> AsyncIterator[Redis]:
    """A client on the real Redis; the test's namespace is emptied afterwards and the
    client's pipe (see :func:`~shared.redis_pipe.pipe_of`) closed with it."""
    client = create_redis(redis_url)
    yield client
    leftovers = [key async for key in client.scan_iter(match=f"{redis_namespace}:*")]
    if leftovers:
        await client.delete(*leftovers)
    await close_pipe_of(client)
    await client.aclose()
