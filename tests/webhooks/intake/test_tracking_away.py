"""The intake while tracking is away: a delivery is decided by the webhook (database,
cached), its signature and Redis alone, so deliveries are accepted as fast with
tracking's port closed, or held open by a listener that never answers, as with tracking
up; the app makes no call to tracking on the way (only the worker waits for it)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.support.asgi import HostRouter, running
from tests.support.redis_server import free_port
from tests.webhooks.intake.test_endpoints import queued
from tests.webhooks.support import custom_headers
from webhooks.app import create_app
from webhooks.settings import Settings

DELIVERIES = 200
AT_ONCE = 20  # senders in flight
# With tracking away, the same deliveries may take at most this many times as long as with
# tracking up (measured in the same test), or FLOOR seconds if that is more: room for a
# shared machine's noise, and still below one read timeout (10 s) on tracking.
SLOWER_AT_MOST = 3.0
FLOOR = 2.0
# A new app's first deliveries (its connections opened, the webhook loaded) are not timed
# against the others, only bounded: a call to tracking there would wait out its timeout.
WARM_UP_DEADLINE = 20.0


class Counted(httpx.AsyncBaseTransport):
    """Real network requests, counted."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@contextlib.asynccontextmanager
async def silent_listener() -> AsyncIterator[tuple[int, list[asyncio.StreamWriter]]]:
    """A port that accepts connections and never answers (a hung tracking), and the
    connections it accepted."""
    accepted: list[asyncio.StreamWriter] = []

    async def hold(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], accepted
    finally:
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()


@contextlib.asynccontextmanager
async def tracking_away(kind: str) -> AsyncIterator[tuple[str, list[asyncio.StreamWriter]]]:
    """tracking's URL with nothing listening (``closed``) or a listener that never answers
    (``silent``), and the connections that listener accepted."""
    if kind == "closed":
        yield f"http://127.0.0.1:{free_port()}", []
        return
    async with silent_listener() as (port, accepted):
        yield f"http://127.0.0.1:{port}", accepted


async def send_all(app: Any, hook: dict[str, Any], tag: str, count: int = DELIVERIES) -> float:
    """Seconds to have ``count`` new signed deliveries answered, ``AT_ONCE`` at a time
    (each must be accepted)."""
    transport = httpx.ASGITransport(app=app)
    path = f"/api/v1/webhooks/custom/{hook['id']}/events"
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:

        async def one(n: int) -> int:
            body = json.dumps({"build": n, "run": tag}).encode()
            headers = custom_headers(hook["secret"], body)
            return (await client.post(path, content=body, headers=headers)).status_code

        started = time.monotonic()
        for first in range(0, count, AT_ONCE):
            statuses = await asyncio.gather(*(one(n) for n in range(first, first + AT_ONCE)))
            assert set(statuses) == {202}, statuses
        return time.monotonic() - started


@pytest.mark.parametrize("kind", ["closed", "silent"])
async def test_the_intake_does_not_slow_down_or_call_tracking_while_it_is_away(
    kind, webhooks_app, webhooks_settings: Settings, router: HostRouter, create_webhook
):
    hook = await create_webhook("custom")  # made while tracking is up (the project)
    await send_all(webhooks_app, hook, "warm-up", AT_ONCE)  # the webhook cached
    with_tracking = await send_all(webhooks_app, hook, "tracking-up")

    network = Counted()
    limit = max(SLOWER_AT_MOST * with_tracking, FLOOR)
    async with tracking_away(kind) as (tracking_url, accepted):
        settings = webhooks_settings.model_copy(update={"tracking_url": tracking_url})
        # Identity in process as before; every request to tracking goes over the network.
        away_router = HostRouter({**router.routes, "127.0.0.1/": network})
        async with running(create_app(settings, http_transport=away_router)) as away:
            for run, count, deadline in [
                ("warm-up-away", AT_ONCE, WARM_UP_DEADLINE),
                ("tracking-away", DELIVERIES, limit),
            ]:
                try:
                    # A deadline, not a sleep: an intake waiting on tracking fails here.
                    async with asyncio.timeout(deadline):
                        await send_all(away, hook, run, count)
                except TimeoutError:
                    pytest.fail(
                        f"{count} deliveries ({run}) took over {deadline:.2f} s with "
                        f"tracking {kind}; {DELIVERIES} took {with_tracking:.2f} s with it up"
                    )
            assert network.requests == []
            assert accepted == []
        await network.aclose()
    assert await queued(webhooks_app) == 2 * (AT_ONCE + DELIVERIES)
