"""The intake's second entry path, the direct one: deliveries answered ahead of the
service's middleware stack and router, with the routed endpoint's answers.

A delivery needs none of what that stack does for the management API (token
verification, the idempotency records, route matching over every route), and under load
that stack cost more CPU than the intake itself. :class:`IntakeFastPath`, the webhooks
app's front door (:attr:`shared.app.ServiceApp.front`: ahead of every middleware,
Starlette's own error middleware included), answers ``POST
/api/v1/webhooks/{webhook_type}/{webhook_id}/events`` with :func:`intake_answer` inside
the shared middleware's :meth:`ServiceMiddleware.answer
<shared.middleware.ServiceMiddleware.answer>` (request id, body size limit, error
rendering, security headers, access log: what the full stack does). Its answer comes from
:func:`webhooks.intake.endpoints.deliver`, as the routed endpoint's does. The few
requests the router answers on its own (another method: 405; a webhook id that is not a
canonical UUID: 422 or the router's decision) go down the full stack to that endpoint.

Served by :class:`shared.http_protocol.HttpProtocol` (as ``python -m webhooks`` does),
deliveries skip the ASGI cycle as well: at startup the front door registers
:meth:`IntakeFastPath.route` as the app's direct route, and the protocol writes the
answer :func:`intake_answer` returns. Under any other server (or ``--http httptools``)
they come through :meth:`IntakeFastPath.__call__`, with the same answers.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import time
import uuid
from collections import Counter

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from shared import tracing
from shared.http_protocol import DIRECT_ROUTE, DirectAnswer, DirectHandler, send_answer
from shared.idempotency import read_body
from shared.logging import PRE_REDACTED
from shared.metrics import HTTP, observe_request
from shared.middleware import ServiceMiddleware, access_logger
from shared.responses import ErrorStyle
from webhooks.intake.endpoints import deliver
from webhooks.state import WebhooksState

PREFIX = "/api/v1/webhooks/"
SUFFIX = "/events"
PATH = PREFIX + "{webhook_type}/{webhook_id}" + SUFFIX


@functools.lru_cache(maxsize=4096)  # senders deliver to the same few webhooks over and over
def _canonical_uuid(text: str) -> uuid.UUID | None:
    """``text`` as a UUID when it is written 8-4-4-4-12 (what the router's UUID
    validation surely accepts alike); anything else is left to the router."""
    if len(text) != 36 or text[8] != "-" or text[13] != "-" or text[18] != "-" or text[23] != "-":
        return None
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


def _intake_params(scope: Scope) -> tuple[str, uuid.UUID] | None:
    """(webhook type, webhook id) of a request the intake answers itself, else ``None``."""
    if scope["type"] != "http" or scope["method"] != "POST" or scope.get("root_path"):
        return None
    path: str = scope["path"]
    if not (path.startswith(PREFIX) and path.endswith(SUFFIX)):
        return None
    parts = path[len(PREFIX) : -len(SUFFIX)].split("/")
    if len(parts) != 2:
        return None
    webhook_id = _canonical_uuid(parts[1])
    return None if webhook_id is None else (parts[0], webhook_id)


_EMPTY = [(b"content-length", b"0")]  # what ``Response(status_code=...)`` sends
_TEXT = b"text/plain; charset=utf-8"


async def intake_answer(
    scope: Scope, receive: Receive, headers: dict[str, str]
) -> DirectAnswer | None:
    """The answer of :func:`~webhooks.intake.endpoints.deliver` to one request, as the
    routed endpoint's ``respond`` sends it (``None``: the client went away)."""

    async def body() -> bytes:
        read = await read_body(receive)  # ServiceMiddleware limits what it reads
        if read is None:
            raise ClientDisconnect
        return read

    params = scope["path_params"]
    try:
        answer = await deliver(
            WebhooksState.of_scope(scope).intake,
            params["webhook_type"],
            params["webhook_id"],
            headers,
            body,
        )
    except ClientDisconnect:
        return None
    if answer.text is None:
        return DirectAnswer(answer.status_code, _EMPTY)
    text = answer.text.encode()
    length = str(len(text)).encode()
    return DirectAnswer(
        answer.status_code, [(b"content-length", length), (b"content-type", _TEXT)], text
    )


class IntakeMiddleware(ServiceMiddleware):
    """The shared middleware with the intake's access log: a line for every answer that is
    not 2xx (as every request elsewhere gets), and one line a second counting the 2xx
    answers by status. A line per accepted delivery cost about as much CPU as accepting it
    (the record, its formatting, the write, and whatever collects the lines); the gateway's
    access log keeps a line per request, with the same request id."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        server_header: str,
        max_body_size: int,
        error_style: ErrorStyle,
        interval: float = 1.0,
    ) -> None:
        super().__init__(
            app,
            server_header=server_header,
            max_body_size=max_body_size,
            error_style=error_style,
        )
        self.interval = interval
        self._answered: Counter[int] = Counter()
        self._since = 0.0

    def log(self, scope: Scope, status: int, started: float) -> None:
        if 200 <= status < 300:
            self._count(status)
        else:
            super().log(scope, status, started)

    def _count(self, status: int) -> None:
        if not self._answered:
            self._since = time.monotonic()
            # In a context of its own: the line is about no one request (no request id).
            loop = asyncio.get_running_loop()
            loop.call_later(self.interval, self.flush, context=contextvars.Context())
        self._answered[status] += 1

    def flush(self) -> None:
        """Write the counts gathered since the last line (also when the app stops)."""
        if not self._answered:
            return
        answered, self._answered = self._answered, Counter()
        seconds = time.monotonic() - self._since
        summary = ", ".join(f"{count} x {status}" for status, count in sorted(answered.items()))
        access_logger.info(
            "POST %s: %s in %.1f s",
            PATH,
            summary,
            seconds,
            extra={
                PRE_REDACTED: True,  # counts and a fixed path
                "answered": {str(status): count for status, count in answered.items()},
                "seconds": round(seconds, 3),
            },
        )


class IntakeFastPath:
    """The webhooks app's front door: intake requests take the short stack
    described in the module's docstring; every other request (and the lifespan) goes on to
    ``app``, the full stack."""

    def __init__(
        self, app: ASGIApp, *, max_body_size: int, server_header: str, error_style: ErrorStyle
    ) -> None:
        self.app = app
        # Used through its ``answer`` only: what it would wrap is the full stack.
        self.intake = IntakeMiddleware(
            app,
            server_header=server_header,
            max_body_size=max_body_size,
            error_style=error_style,
        )

    def route(self, scope: Scope) -> DirectHandler | None:
        """The app's direct route (:data:`shared.http_protocol.DirectRoute`): the
        intake's requests, those :meth:`__call__` answers itself."""
        params = _intake_params(scope)
        if params is None:
            return None
        scope["path_params"] = {"webhook_type": params[0], "webhook_id": params[1]}
        return self.answer if tracing.tracer is None else self.traced_answer

    async def answer(self, scope: Scope, receive: Receive) -> DirectAnswer | None:
        # Counted here: this path skips the stack's MetricsMiddleware.
        begun = time.perf_counter()
        HTTP.in_flight += 1
        answer = None
        try:
            answer = await self.intake.answer(scope, receive, intake_answer)
            return answer
        finally:
            HTTP.in_flight -= 1
            status = 499 if answer is None else answer.status  # None: the client went away
            observe_request("POST", PATH, status, time.perf_counter() - begun)

    async def traced_answer(self, scope: Scope, receive: Receive) -> DirectAnswer | None:
        """:meth:`answer` in the request's span, while tracing is on (this path skips the
        stack's MetricsMiddleware, which traces the others)."""
        with tracing.server_span(scope) as span:
            answer = await self.answer(scope, receive)
            status = 499 if answer is None else answer.status
            tracing.end_server_span(span, scope, PATH, status)
            return answer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self.route(scope)
        if handler is not None:
            answer = await handler(scope, receive)
            if answer is not None:
                await send_answer(answer, send)
            return
        if scope["type"] == "lifespan":
            # The server's state for every request (uvicorn's): where HttpProtocol looks.
            scope.setdefault("state", {})[DIRECT_ROUTE] = self.route
            try:
                await self.app(scope, receive, send)
            finally:
                self.intake.flush()
            return
        await self.app(scope, receive, send)
