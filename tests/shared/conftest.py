"""Fixtures for the shared library's tests (``redis_url`` and ``redis_namespace`` come from
``tests/conftest.py``)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

import httpx
import pytest
from redis.asyncio import Redis
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from shared.app import create_service_app
from shared.redis import create_redis
from shared.redis_pipe import close_pipe_of
from shared.routing import api_route
from shared.settings import ServiceSettings
from tests.support.asgi import client_for
from tests.support.databases import Databases


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


@asynccontextmanager
async def service_client(
    databases: Databases,
    redis_url: str,
    routes: Sequence[BaseRoute],
    *,
    title: str = "gadgets",
    version: str = "1",
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of a service app serving ``routes`` behind the shared middleware, on a
    database of its own (no migrations), its lifespan run."""
    async with databases.postgres(None) as url:
        settings = ServiceSettings(
            database_url=url,
            redis_url=redis_url,
            redis_namespace=f"test-{uuid.uuid4().hex[:12]}",
            jwks_url="http://127.0.0.1:9/.well-known/jwks.json",
        )
        app = create_service_app(
            settings, title=title, version=version, routes=list(routes), migrations=None
        )
        async with client_for(app) as client:
            yield client


GADGET = "/api/v1/gadgets/{gadget_id}"


async def gadget_boom(_request: Request) -> Response:
    raise RuntimeError("boom")


def gadget_routes(get_gadget: Callable[[Request], Awaitable[Response]]) -> list[BaseRoute]:
    """``GET`` :data:`GADGET` answered by ``get_gadget``, and a route that fails (500)."""
    return [
        api_route(GADGET, get_gadget, method="GET", summary="Get"),
        api_route("/api/v1/gadget-boom", gadget_boom, method="GET", summary="Boom"),
    ]
