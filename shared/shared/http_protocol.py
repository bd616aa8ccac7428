"""uvicorn's httptools protocol, with a response's head and body sent in one write.

uvicorn writes the status line and headers when the app sends ``http.response.start``,
and the body when it sends ``http.response.body``: two ``send`` system calls for every
answer. Behind the gateway each one also wakes nginx, which reads the head, then waits to
be woken again for the body. On a virtual machine that second wake-up cost about as much
as a sequential create spent in SQLite (~50 µs of a ~600 µs request).

:class:`HttpProtocol` gives each connection a transport that keeps what is written and
sends it as one write when the response is complete, when the connection closes, or at
the end of the loop's current turn, whichever comes first. A plain response (head and
body sent together, as every ``Response`` does) becomes one write; a streamed one still
goes out chunk by chunk, each within the turn of the loop that wrote it.

It also answers *direct routes* without the ASGI cycle. An app whose lifespan puts a
:data:`DirectRoute` in the state under :data:`DIRECT_ROUTE` is asked, for each request,
whether it answers the request directly; if so, the request's handler gets the scope and
``receive`` as usual, and returns its whole answer (a :class:`DirectAnswer`) instead of
sending ASGI messages, which the protocol writes as one piece. Everything uvicorn does
around a request (pipelining, keep-alive, flow control, ``100 Continue``, disconnects,
shutdown, the ``date`` header) stays uvicorn's: a direct request has uvicorn's own
request/response cycle, only its answer skips the ASGI messages, the app's middleware and
uvicorn's proxy-headers rewrite (which the handler applies with :func:`resolve_proxy` when
it needs the client's address). The webhook intake answers this way: per delivery, the ASGI
cycle and its layers cost about as much CPU as the intake's own work.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple, cast

from starlette.types import Message, Receive, Scope, Send
from uvicorn._types import ASGI3Application
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
    "CoalescingTransport",
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


class CoalescingTransport:
    """A stream transport whose writes wait (see the module docstring) until :meth:`flush`,
    :meth:`close` or the end of the loop's turn; everything else is the wrapped
    transport's."""

    __slots__ = ("_loop", "_pending", "_scheduled", "transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._scheduled = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        self._pending.append(bytes(data))
        if not self._scheduled:
            # A chunk of a streamed answer (or a 100 Continue) is not held past this turn.
            self._scheduled = True
            self._loop.call_soon(self._flush_scheduled)

    def _flush_scheduled(self) -> None:
        self._scheduled = False
        self.flush()

    def flush(self) -> None:
        """Send what is pending, as one write."""
        pending = self._pending
        if not pending:
            return
        data = pending[0] if len(pending) == 1 else b"".join(pending)
        pending.clear()
        if not self.transport.is_closing():
            self.transport.write(data)

    def write_now(self, data: bytes) -> None:
        """``data`` at once, in one write with whatever is pending (a whole answer:
        nothing to wait for, and no end-of-turn flush to schedule)."""
        if self._pending:
            self._pending.append(data)
            self.flush()
        elif not self.transport.is_closing():
            self.transport.write(data)

    def writelines(self, chunks: list[bytes]) -> None:
        for chunk in chunks:
            self.write(chunk)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self.transport.abort()

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        # get_extra_info, set_protocol, pause_reading, ... (not on the hot path)
        return getattr(self.transport, name)


_rewrites: dict[str, Callable[[Scope], None]] = {}  # by the trusted hosts' setting


class HttpProtocol(HttpToolsProtocol):
    """``uvicorn.run(http=HttpProtocol)``: httptools, with coalesced writes and direct
    routes (see the module docstring)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # Flow control (pause/resume reading, the write-buffer callbacks) stays on the real
        # transport; requests and answers see the coalescing one.
        self.transport = cast(asyncio.Transport, CoalescingTransport(self.transport, self.loop))
        config = self.config
        self._rewrite: Callable[[Scope], None] | None = None
        if config.proxy_headers:
            trusted = config.forwarded_allow_ips
            key = trusted if isinstance(trusted, str) else ",".join(trusted)
            rewrite = _rewrites.get(key)
            if rewrite is None:
                rewrite = _rewrites[key] = _proxy_rewrite(trusted)
            self._rewrite = rewrite

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: ASGI3Application) -> None:
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
        data = b"".join(content)
        transport: Any = cycle.transport  # the coalescing one, as connection_made set it
        if type(transport) is CoalescingTransport:
            transport.write_now(data)
        else:
            transport.write(data)
        cycle.response_complete = True
        cycle.message_event.set()
        if not cycle.keep_alive:
            cycle.transport.close()
        cycle.on_response()

    def on_response_complete(self) -> None:
        transport = self.transport
        if isinstance(transport, CoalescingTransport):
            transport.flush()  # the answer's head and body, in one write
        super().on_response_complete()
