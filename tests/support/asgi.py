"""Drive an ASGI app in-process with its lifespan run, as a server would."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.http_protocol import HttpProtocol


class LifespanApp:
    """Runs the app's lifespan and copies its state into every request scope, which is
    what uvicorn does and ``httpx.ASGITransport`` does not."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.state: dict[str, Any] = {}
        self._to_app: asyncio.Queue[Message] = asyncio.Queue()
        self._from_app: asyncio.Queue[Message] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope = {**scope, "state": dict(self.state)}
        await self.app(scope, receive, send)

    async def _run(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": self.state}
        await self.app(scope, self._to_app.get, self._from_app.put)

    async def startup(self) -> None:
        self._task = asyncio.create_task(self._run())
        await self._to_app.put({"type": "lifespan.startup"})
        message = await self._from_app.get()
        if message["type"] != "lifespan.startup.complete":
            await self._task
            raise RuntimeError(f"lifespan startup failed: {message.get('message')}")

    async def shutdown(self) -> None:
        await self._to_app.put({"type": "lifespan.shutdown"})
        message = await self._from_app.get()
        if self._task is not None:
            await self._task
        if message["type"] != "lifespan.shutdown.complete":
            raise RuntimeError(f"lifespan shutdown failed: {message.get('message')}")


@asynccontextmanager
async def running(app: ASGIApp) -> AsyncIterator[LifespanApp]:
    wrapped = LifespanApp(app)
    await wrapped.startup()
    try:
        yield wrapped
    finally:
        await wrapped.shutdown()


@asynccontextmanager
async def running_together(*apps: ASGIApp) -> AsyncIterator[list[LifespanApp]]:
    """Several apps' lifespans started at the same time, as replicas of a service are."""
    async with AsyncExitStack() as stack:
        yield list(await asyncio.gather(*(stack.enter_async_context(running(a)) for a in apps)))


@asynccontextmanager
async def client_for(
    app: ASGIApp, base_url: str = "http://testserver"
) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client talking to ``app`` in-process, lifespan started and stopped."""
    async with (
        running(app) as wrapped,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=wrapped), base_url=base_url) as client,
    ):
        yield client


def client_at(app: ASGIApp, address: str) -> httpx.AsyncClient:
    """An httpx client of ``app`` (already running) whose requests come from ``address``."""
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


class HostRouter(httpx.AsyncBaseTransport):
    """Sends each request to the in-process app serving its host, as DNS would route it
    to a process (and, for a key ``host/prefix``, the paths under a prefix to another
    app; the first matching key wins). Services that call one another (identity and
    tracking) share one router and are registered once started."""

    def __init__(self, routes: Mapping[str, httpx.AsyncBaseTransport] | None = None) -> None:
        self.routes = dict(routes or {})

    def register(self, key: str, app: ASGIApp) -> None:
        self.routes[key] = httpx.ASGITransport(app=app)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        for key, transport in self.routes.items():
            host, _, prefix = key.partition("/")
            if request.url.host == host and request.url.path.startswith("/" + prefix):
                return await transport.handle_async_request(request)
        return httpx.Response(502, text=f"no route to {request.url}")


class Outage(httpx.AsyncBaseTransport):
    """Passes requests on to ``inner`` until ``down`` is set, then fails to connect, as a
    process that went away does."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.down = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.down:
            raise httpx.ConnectError("connection refused", request=request)
        return await self.inner.handle_async_request(request)


@asynccontextmanager
async def served(app: ASGIApp, port: int | None = None, **options: Any) -> AsyncIterator[str]:
    """``app`` served by uvicorn with the platform's protocol (as ``python -m <service>``
    serves it: lifespan, proxy headers from 127.0.0.1) on ``port`` (by default a free
    local port); its URL."""
    if port is None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        http=HttpProtocol,
        log_config=None,
        access_log=False,
        proxy_headers=True,
        forwarded_allow_ips="127.0.0.1",
        server_header=False,
        **options,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:  # uvicorn says it started by a flag only
            if task.done():
                await task
                raise RuntimeError("uvicorn stopped before it started")
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)
