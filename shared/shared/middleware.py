"""Pure ASGI middleware shared by every service.

Order (outermost first), as :func:`shared.app.create_service_app` installs it:
request id → access log → security headers → body size limit → the app.
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.errors import PayloadTooLarge
from shared.logging import PRE_REDACTED, SECRET_KEY_PATTERN, request_id_var
from shared.responses import ErrorStyle, error_response, error_style_var

REQUEST_ID_HEADER = "x-request-id"
_VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")

access_logger = logging.getLogger("platform.access")


def new_request_id() -> str:
    """Eight hex characters, as the reference and the zenml client use."""
    return secrets.token_hex(4)


def current_request_id() -> str | None:
    return request_id_var.get()


class RequestIdMiddleware:
    """Accept a well-formed ``X-Request-ID`` or create one; echo it on the response.

    The id is kept in a context variable, so log records and outgoing HTTP calls made
    while serving the request carry it (see :mod:`shared.http`).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                incoming = value.decode("latin-1")
                break
        # fullmatch: with match(), "$" would also accept a value ending in a newline.
        request_id = incoming if incoming and _VALID_REQUEST_ID.fullmatch(incoming) else None
        request_id = request_id or new_request_id()
        scope.setdefault("state", {})["request_id"] = request_id
        token = request_id_var.set(request_id)

        raw_id = request_id.encode("latin-1")

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = message.setdefault("headers", [])
                if not any(name.lower() == b"x-request-id" for name, _ in headers):
                    message["headers"] = [*headers, (b"x-request-id", raw_id)]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            request_id_var.reset(token)


class ErrorStyleMiddleware:
    """Renders every error of the requests it serves in ``style`` (see
    :data:`shared.responses.error_style_var`); outermost, so errors raised by any other
    middleware render the same way."""

    def __init__(self, app: ASGIApp, *, style: ErrorStyle) -> None:
        self.app = app
        self.style = style

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = error_style_var.set(self.style)
        try:
            await self.app(scope, receive, send)
        finally:
            error_style_var.reset(token)


def _redacted_query(query_string: bytes) -> str:
    if not query_string:
        return ""
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    masked = [(k, "***" if SECRET_KEY_PATTERN.search(k) else v) for k, v in pairs]
    return "?" + urlencode(masked, safe="*")


class AccessLogMiddleware:
    """One structured line per request: method, path (secrets in the query masked), status,
    duration. Replaces uvicorn's access log."""

    def __init__(self, app: ASGIApp, *, skip_paths: Iterable[str] = ("/health",)) -> None:
        self.app = app
        self.skip_paths = frozenset(skip_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.skip_paths:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_capturing(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_capturing)
        finally:
            self.log(scope, status, started)

    def log(self, scope: Scope, status: int, started: float) -> None:
        """The line for one request answered ``status``, begun at ``started``
        (``time.perf_counter()``)."""
        client = scope.get("client")
        access_logger.info(
            "%s %s%s %s",
            scope["method"],
            scope["path"],
            _redacted_query(scope.get("query_string", b"")),
            status,
            extra={
                PRE_REDACTED: True,  # the query is masked above; paths hold no secrets
                "status": status,
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                "client": client[0] if client else None,
            },
        )


SECURITY_HEADERS: tuple[tuple[str, str], ...] = (
    ("cache-control", "no-store, no-cache, must-revalidate"),
    (
        "content-security-policy",
        "default-src 'none'; frame-ancestors 'self'; base-uri 'none'; form-action 'self'",
    ),
    ("strict-transport-security", "max-age=63072000; includeSubdomains"),
    ("permissions-policy", "accelerometer=(), camera=(), geolocation=(), microphone=()"),
    ("referrer-policy", "no-referrer-when-downgrade"),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "SAMEORIGIN"),
)


_SECURITY_HEADERS_RAW = tuple(
    (name.encode("latin-1"), value.encode("latin-1")) for name, value in SECURITY_HEADERS
)


class SecurityHeadersMiddleware:
    """The reference's security headers on every response except ``/health`` and
    ``/ready``; a header the handler already set wins."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        server_header: str,
        skip_paths: Iterable[str] = ("/health", "/ready"),
    ) -> None:
        self.app = app
        self.server_header = server_header
        self._server = server_header.encode("latin-1")
        self.skip_paths = frozenset(skip_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.skip_paths:
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                # On the raw list: one pass, instead of a scan per header.
                headers = message.get("headers", [])
                present = {name.lower() for name, _ in headers}
                added = [pair for pair in _SECURITY_HEADERS_RAW if pair[0] not in present]
                kept = [pair for pair in headers if pair[0].lower() != b"server"]
                message["headers"] = [*kept, *added, (b"server", self._server)]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class BodySizeLimitMiddleware:
    """Refuse request bodies over ``max_body_size`` bytes with 413.

    A declared ``Content-Length`` over the limit is refused before anything is read; a
    chunked body is counted as it streams and refused as soon as it crosses the limit, so
    the whole body is never buffered.
    """

    def __init__(self, app: ASGIApp, *, max_body_size: int) -> None:
        self.app = app
        self.max_body_size = max_body_size

    def _error(self) -> PayloadTooLarge:
        return PayloadTooLarge(f"Request body exceeds the limit of {self.max_body_size} bytes.")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_body_size:
                    response = error_response(
                        self._error(), scope.get("state", {}).get("request_id")
                    )
                    await response(scope, receive, send)
                    return
                break

        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_size:
                    raise self._error()
            return message

        await self.app(scope, limited_receive, send)
