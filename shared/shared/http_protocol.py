"""uvicorn's httptools protocol, answering an app's *direct routes* without the ASGI cycle.

An app whose lifespan puts a :data:`DirectRoute` in the state under :data:`DIRECT_ROUTE`
is asked, for each request, whether it answers the request directly; if so, the request's
handler gets the scope and ``receive`` as usual, and returns its whole answer (a
:class:`DirectAnswer`) instead of sending ASGI messages, which the protocol writes in one
piece. Everything uvicorn does around a request (pipelining, keep-alive, flow control,
``100 Continue``, disconnects, shutdown, the ``date`` header) stays uvicorn's: a direct
request has uvicorn's own request/response cycle, only its answer skips the ASGI messages,
the app's middleware and uvicorn's proxy-headers rewrite (which the handler applies with
:func:`resolve_proxy` when it needs the client's address). The webhook intake answers this
way (:mod:`webhooks.intake.asgi`): per delivery, the ASGI cycle cost about as much CPU as
the intake's own work.

A shortcut through uvicorn's private parts (``HttpToolsProtocol._start_asgi_task`` and its
request/response cycle's attributes), measured and listed in ``docs/performance.md``;
``--http httptools`` on a service's command line (:mod:`shared.serve`) switches it off.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple

from starlette.types import Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
from uvicorn.protocols.http.httptools_impl import (
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

__all__ = [
    "DIRECT_ROUTE",
    "PROXY_HEADERS",
    "DirectAnswer",
    "DirectHandler",
    "DirectRoute",
    "HttpProtocol",
    "resolve_proxy",
    "send_answer",
]


class DirectAnswer(NamedTuple):
    """A whole answer. ``headers`` are complete (``content-length`` included) and already
    valid: the protocol writes them as they are, without uvicorn's checks."""

    status: int
    headers: Sequence[tuple[bytes, bytes]]
    body: bytes = b""


DirectHandler = Callable[[Scope, Receive], Awaitable[DirectAnswer | None]]
"""Answers one request (``None``: the client went away, nothing to send)."""

DirectRoute = Callable[[Scope], DirectHandler | None]
"""The handler of a request the app answers directly, else ``None`` (the ASGI app
answers). It sees the scope as uvicorn made it: method, path and headers, no proxy
rewrite; it may add to the scope what it matched (path parameters, say)."""

DIRECT_ROUTE = "shared.direct_route"
"""The lifespan state's key for the app's :data:`DirectRoute`."""

PROXY_HEADERS = "shared.proxy_headers"
"""In a direct request's scope when uvicorn's proxy-headers rewrite was skipped: the
function that applies it (see :func:`resolve_proxy`)."""


def resolve_proxy(scope: Scope) -> None:
    """Apply the proxy-headers rewrite (client address and scheme from the trusted
    proxy's ``X-Forwarded-*`` headers) a direct request skipped; a no-op otherwise."""
    rewrite = scope.pop(PROXY_HEADERS, None)
    if rewrite is not None:
        rewrite(scope)


async def send_answer(answer: DirectAnswer, send: Send) -> None:
    """Send ``answer`` as ASGI messages (a direct handler serving through ASGI)."""
    await send({"type": "http.response.start", "status": answer.status, "headers": answer.headers})
    await send({"type": "http.response.body", "body": answer.body})


async def _nothing(*_: Any) -> Message:
    raise RuntimeError("the proxy-headers rewrite reads or sends nothing")


async def _keep(scope: Scope, receive: Receive, send: Send) -> None:
    return None


def _proxy_rewrite(trusted_hosts: list[str] | str) -> Callable[[Scope], None]:
    """uvicorn's own proxy-headers middleware, applied to a scope on its own: the
    middleware calls an app that does nothing, so its coroutine ends without suspending."""
    middleware = ProxyHeadersMiddleware(_keep, trusted_hosts=trusted_hosts)  # type: ignore[arg-type]

    def rewrite(scope: Scope) -> None:
        coroutine = middleware(scope, _nothing, _nothing)  # type: ignore[arg-type]
        try:
            coroutine.send(None)
        except StopIteration:
            return
        coroutine.close()  # pragma: no cover  (it never suspends)
        raise RuntimeError("the proxy-headers rewrite suspended")

    return rewrite


_rewrites: dict[str, Callable[[Scope], None]] = {}  # by the trusted hosts' setting


class HttpProtocol(HttpToolsProtocol):
    """``uvicorn.run(http=HttpProtocol)``: httptools, with direct routes (see the module
    docstring)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        config = self.config
        self._rewrite: Callable[[Scope], None] | None = None
        if config.proxy_headers:
            trusted = config.forwarded_allow_ips
            key = trusted if isinstance(trusted, str) else ",".join(trusted)
            rewrite = _rewrites.get(key)
            if rewrite is None:
                rewrite = _rewrites[key] = _proxy_rewrite(trusted)
            self._rewrite = rewrite

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        route: DirectRoute | None = self.app_state.get(DIRECT_ROUTE)
        # Not for uvicorn's own 503 app (over its concurrency limit).
        handler = route(cycle.scope) if route is not None and app is self.app else None  # type: ignore[arg-type]
        if handler is None:
            super()._start_asgi_task(cycle, app)
            return
        if self._rewrite is not None:
            cycle.scope[PROXY_HEADERS] = self._rewrite  # type: ignore[literal-required]
        coroutine = self._answer(cycle, handler)
        if self.config.reset_contextvars:
            task = self.loop.create_task(coroutine, context=contextvars.Context())
        else:
            task = self.loop.create_task(coroutine)
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    async def _answer(self, cycle: RequestResponseCycle, handler: DirectHandler) -> None:
        """What ``cycle.run_asgi`` does, for a handler that returns its answer."""
        try:
            answer = await handler(cycle.scope, cycle.receive)  # type: ignore[arg-type]
            if answer is not None:
                await self._write(cycle, answer)
            elif not cycle.disconnected:
                cycle.logger.error("Direct handler returned without an answer.")
                await cycle.send_500_response()
        except BaseException as exc:
            cycle.logger.error("Exception in direct handler\n", exc_info=exc)
            if not cycle.response_started:
                await cycle.send_500_response()
            else:  # pragma: no cover  (the answer is written in one piece, at the end)
                cycle.transport.close()
        finally:
            cycle.on_response = lambda: None

    @staticmethod
    async def _write(cycle: RequestResponseCycle, answer: DirectAnswer) -> None:
        """What ``cycle.send`` does with a start and a last body message, in one write."""
        if cycle.flow.write_paused and not cycle.disconnected:
            await cycle.flow.drain()
        if cycle.disconnected:
            return
        cycle.response_started = True
        cycle.waiting_for_100_continue = False
        status = answer.status
        if cycle.access_log:
            resolve_proxy(cycle.scope)  # type: ignore[arg-type]
            cycle.access_logger.info(
                '%s - "%s %s HTTP/%s" %d',
                get_client_addr(cycle.scope),
                cycle.scope["method"],
                get_path_with_query_string(cycle.scope),
                cycle.scope["http_version"],
                status,
            )
        content = [STATUS_LINE[status]]
        for name, value in cycle.default_headers:
            content += (name, b": ", value, b"\r\n")
        for name, value in answer.headers:
            content += (name, b": ", value, b"\r\n")
        if not cycle.keep_alive:
            content.append(b"connection: close\r\n")
        content += (b"\r\n", b"" if cycle.scope["method"] == "HEAD" else answer.body)
        cycle.transport.write(b"".join(content))
        cycle.response_complete = True
        cycle.message_event.set()
        if not cycle.keep_alive:
            cycle.transport.close()
        cycle.on_response()
