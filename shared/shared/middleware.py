"""The pure ASGI middleware every service runs in front of its app.

:func:`shared.app.create_service_app` installs, outermost first:
:class:`shared.metrics.MetricsMiddleware` (counts, timings, the trace span), then
:class:`ServiceMiddleware` (error style, request id, access log, security headers, error
rendering, body size limit), then authentication (:class:`shared.auth.AuthMiddleware`)
and idempotent replays (:class:`shared.idempotency.IdempotencyMiddleware`).
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextvars import Token
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.errors import PayloadTooLarge, PlatformError, refused_value
from shared.http_protocol import DirectAnswer, resolve_proxy, send_answer
from shared.logging import MASK, PRE_REDACTED, is_secret_key, request_id_var
from shared.responses import JSON, ErrorStyle, error_body, error_response, error_style_var

__all__ = ["ServiceMiddleware", "access_logger"]

REQUEST_ID_HEADER = "x-request-id"
_VALID_REQUEST_ID = re.compile(rb"[A-Za-z0-9._:-]{1,64}")

access_logger = logging.getLogger("platform.access")
# The unhandled-error line keeps the logger it has always been written under (it was
# raised in shared.app), which alerts and log queries match on.
error_logger = logging.getLogger("shared.app")


def new_request_id() -> str:
    """Eight hex characters, as the reference and the zenml client use."""
    return os.urandom(4).hex()  # secrets.token_hex(4), less two calls


def current_request_id() -> str | None:
    return request_id_var.get()


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
# The names an answer's own headers are merged on; most answers have none of them.
_MERGED_NAMES = frozenset(name for name, _ in _SECURITY_HEADERS_RAW) | {b"server"}
_MERGED_OR_ID = _MERGED_NAMES | {b"x-request-id"}

# Characters that neither parse_qsl unquotes nor urlencode(safe="*") quotes, in fields of
# at most one "=": a query of only these is written back as it came, secrets masked.
_PLAIN_FIELD = r"[\w.~*-]*(?:=[\w.~*-]*)?"
_PLAIN_QUERY = re.compile(rf"{_PLAIN_FIELD}(?:&{_PLAIN_FIELD})*", re.ASCII)


def _redacted_query(query_string: bytes) -> str:
    """``?`` and the query, normalised as ``urlencode(parse_qsl(...))`` writes it, with the
    values of secret-looking keys masked; ``""`` without a query."""
    if not query_string:
        return ""
    text = query_string.decode("latin-1")
    if _PLAIN_QUERY.fullmatch(text):
        # The common case, without parse_qsl's unquoting and urlencode's quoting (for a
        # three-field query they cost more than the rest of the line): the same result.
        # Empty fields are dropped, as parse_qsl drops them.
        fields = []
        for field in text.split("&"):
            if field:
                name, _, value = field.partition("=")
                fields.append(f"{name}={MASK if is_secret_key(name) else value}")
        return "?" + "&".join(fields)
    pairs = parse_qsl(text, keep_blank_values=True)
    masked = [(k, MASK if is_secret_key(k) else v) for k, v in pairs]
    return "?" + urlencode(masked, safe="*")


_HTTP_1 = frozenset({"1.0", "1.1"})

_NAMES: dict[bytes, str] = {}  # header names as text: clients send the same few again and again
_MAX_NAMES = 1024


def header_dict(raw: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    """A request's headers (ASGI's, names already lower-case) by name; the first of
    repeated ones wins, as with Starlette's ``Headers``."""
    names = _NAMES
    headers: dict[str, str] = {}
    for name, value in reversed(raw):
        try:
            text = names[name]  # (a subscript costs less than names.get(name))
        except KeyError:
            text = name.decode("latin-1")
            if len(names) < _MAX_NAMES:
                names[name] = text
        headers[text] = value.decode("latin-1")
    return headers


HeadersHandler = Callable[[Scope, Receive, dict[str, str]], Awaitable[DirectAnswer | None]]
"""A handler :meth:`ServiceMiddleware.answer` serves: the scope, ``receive`` and the
request's headers (:func:`header_dict`) in, the whole answer (or ``None`` when the client
went away) out."""


class ServiceMiddleware:
    """Everything the platform does around a request before its app sees it, as one layer
    (one coroutine frame and one ``send`` wrapper per request instead of six).

    For each HTTP request:

    - errors render in ``error_style`` (:data:`shared.responses.error_style_var`) for the
      whole request, whichever layer raises them;
    - a well-formed ``X-Request-ID`` is kept, anything else replaced by
      :func:`new_request_id`. The id is in ``scope["state"]["request_id"]`` and in
      :data:`shared.logging.request_id_var` while the request is served (log records and
      outgoing HTTP calls carry it, see :mod:`shared.http`), and on the answer unless the
      answer names one already;
    - a declared ``Content-Length`` over ``max_body_size`` is answered 413 before anything
      is read; a body is otherwise counted as it streams and refused
      (:class:`~shared.errors.PayloadTooLarge`) as soon as it crosses the limit, so it is
      never buffered whole;
    - a :class:`~shared.errors.PlatformError` raised outside the router (by the
      authentication middleware, say) renders in its shape; any other exception is logged
      (``unhandled error``, with the request id) and answered with a generic 500, without
      traceback, SQL or secret. Either is re-raised instead if the answer had started;
    - every answer except those of ``security_skip_paths`` (``/health``, ``/ready``) gets
      :data:`SECURITY_HEADERS` (a header the handler set wins) and ``server:
      <server_header>`` in place of any other;
    - every request except those of ``log_skip_paths`` (``/health``) gets one access-log
      line (:meth:`log`). It replaces uvicorn's.

    Other scopes (lifespan, websocket) only get the error style.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        server_header: str,
        max_body_size: int,
        error_style: ErrorStyle = "platform",
        security_skip_paths: Iterable[str] = ("/health", "/ready"),
        log_skip_paths: Iterable[str] = ("/health",),
    ) -> None:
        self.app = app
        self.server_header = server_header
        self._server = server_header.encode("latin-1")
        self._secured_tail = (*_SECURITY_HEADERS_RAW, (b"server", self._server))
        self.max_body_size = max_body_size
        self.error_style: ErrorStyle = error_style
        self.security_skip_paths = frozenset(security_skip_paths)
        self.log_skip_paths = frozenset(log_skip_paths)

    def _too_large(self) -> PayloadTooLarge:
        return PayloadTooLarge(f"Request body exceeds the limit of {self.max_body_size} bytes.")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        style_token = error_style_var.set(self.error_style)
        id_token: Token[str | None] | None = None
        try:
            if scope["type"] != "http":
                await self.app(scope, receive, send)
                return

            incoming: bytes | None = None
            length: bytes | None = None
            chunked = False
            for name, value in scope["headers"]:  # the first of repeated headers counts
                if name == b"x-request-id":
                    if incoming is None:
                        incoming = value
                elif name == b"content-length":
                    if length is None:
                        length = value
                elif name == b"transfer-encoding":
                    chunked = True
            request_id, raw_id, id_token = self._begin(scope, incoming)
            path = scope["path"]
            logged = path not in self.log_skip_paths
            begun = time.perf_counter() if logged else 0.0
            secured = path not in self.security_skip_paths
            started = False
            status = 500

            async def wrapped_send(message: Message) -> None:
                nonlocal started, status
                if message["type"] == "http.response.start":
                    started = True
                    status = message["status"]
                    message["headers"] = self._answer_headers(
                        message.get("headers", []), raw_id, secured
                    )
                await send(message)

            try:
                app_receive = self._counted(scope, receive, chunked, length)
                await self.app(scope, app_receive, wrapped_send)
            except Exception as exc:
                refused = _clients_error(exc, path)
                if started:
                    raise
                await send_answer(self._error_answer(refused, request_id), wrapped_send)
            finally:
                if logged:
                    self.log(scope, status, begun)
        finally:
            if id_token is not None:
                request_id_var.reset(id_token)
            error_style_var.reset(style_token)

    def _begin(self, scope: Scope, incoming: bytes | None) -> tuple[str, bytes, Token[str | None]]:
        """A request's id (``incoming`` when well-formed, else a new one), as text and
        bytes, put in ``scope["state"]`` and :data:`~shared.logging.request_id_var` (the
        token resets it)."""
        request_id, raw_id = _request_id(incoming)
        scope.setdefault("state", {})["request_id"] = request_id
        return request_id, raw_id, request_id_var.set(request_id)

    def _counted(
        self, scope: Scope, receive: Receive, chunked: bool, length: bytes | str | None
    ) -> Receive:
        """``receive`` for the app: a declared ``Content-Length`` over the limit is refused
        (:class:`PayloadTooLarge`) before anything is read; a body is otherwise counted as it
        streams (:meth:`_limited`). Without one (HTTP/1 frames a body with Content-Length or
        Transfer-Encoding) ``receive`` is returned as it is."""
        declared = _declared(length)
        if declared is not None and declared > self.max_body_size:
            raise self._too_large()
        if _has_body(scope, chunked, length, declared):
            return self._limited(receive)
        return receive

    def _limited(self, receive: Receive) -> Receive:
        """``receive``, refusing the body (:class:`PayloadTooLarge`) as soon as it has
        brought more than ``max_body_size`` bytes."""
        limit = self.max_body_size
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise self._too_large()
            return message

        return limited_receive

    def _answer_headers(
        self, headers: Sequence[tuple[bytes, bytes]], raw_id: bytes, secured: bool
    ) -> list[tuple[bytes, bytes]]:
        """An answer's headers with the security headers (the answer's own win), the
        server header and the request id (unless the answer names one)."""
        if secured:
            for name, _ in headers:
                if name.lower() in _MERGED_OR_ID:
                    break
            else:  # the usual answer: none of the names merged on, no id of its own
                return [*headers, *self._secured_tail, (b"x-request-id", raw_id)]
            present = {name.lower() for name, _ in headers}
            if present.isdisjoint(_MERGED_NAMES):
                sent = [*headers, *_SECURITY_HEADERS_RAW, (b"server", self._server)]
            else:
                sent = [pair for pair in headers if pair[0].lower() != b"server"]
                sent += [p for p in _SECURITY_HEADERS_RAW if p[0] not in present]
                sent.append((b"server", self._server))
            has_id = b"x-request-id" in present
        else:
            sent = list(headers)
            has_id = any(name.lower() == b"x-request-id" for name, _ in headers)
        if not has_id:
            sent.append((b"x-request-id", raw_id))
        return sent

    async def answer(
        self, scope: Scope, receive: Receive, handler: HeadersHandler
    ) -> DirectAnswer | None:
        """What :meth:`__call__` does for an HTTP request, around a handler that returns
        its whole answer instead of sending it (a direct route's, see
        :mod:`shared.http_protocol`, or the same handler served through :meth:`__call__`'s
        caller with :func:`~shared.http_protocol.send_answer`): the same request id, body
        limit, error answers, headers and access log, for less work per request. The error
        style is set only while an error renders: a handler's errors are raised, and
        rendered here."""
        headers = header_dict(scope["headers"])
        incoming = headers.get(REQUEST_ID_HEADER)
        request_id, raw_id, id_token = self._begin(
            scope, None if incoming is None else incoming.encode("latin-1")
        )
        path = scope["path"]
        logged = path not in self.log_skip_paths
        begun = time.perf_counter() if logged else 0.0
        answer: DirectAnswer | None = None
        try:
            counted = self._counted(
                scope, receive, "transfer-encoding" in headers, headers.get("content-length")
            )
            answer = await handler(scope, counted, headers)
        except Exception as exc:
            answer = self._error_answer(_clients_error(exc, path), request_id)
        finally:
            if logged:
                self.log(scope, 500 if answer is None else answer.status, begun)
            request_id_var.reset(id_token)
        if answer is None:
            return None
        secured = path not in self.security_skip_paths
        sent = self._answer_headers(answer.headers, raw_id, secured)
        return DirectAnswer(answer.status, sent, answer.body)  # (_replace is slower)

    def _error_answer(self, exc: PlatformError | None, request_id: str) -> DirectAnswer:
        """The answer to ``exc`` (``None``: an unexpected error, a generic 500), in the
        middleware's error style: what both :meth:`__call__` and :meth:`answer` send."""
        style_token = error_style_var.set(self.error_style)
        try:
            if exc is None:
                return _internal_error()
            response = error_response(exc, request_id)
            return DirectAnswer(response.status_code, response.raw_headers, bytes(response.body))
        finally:
            error_style_var.reset(style_token)

    def log(self, scope: Scope, status: int, started: float) -> None:
        """The access-log line of one request answered ``status``, begun at ``started``
        (``time.perf_counter()``): method, path (secrets in the query masked), status,
        duration and client."""
        if not access_logger.isEnabledFor(logging.INFO):
            return
        resolve_proxy(scope)  # a direct request's client, from the proxy's headers
        client = scope.get("client")
        extra = {
            PRE_REDACTED: True,  # the query is masked here; paths hold no secrets
            "status": status,
            "duration_ms": round((time.perf_counter() - started) * 1000, 2),
            "client": client[0] if client else None,
        }
        query = _redacted_query(scope.get("query_string", b""))
        # What access_logger.info() does, without its walk up the stack for the caller
        # (a tenth of the line's cost): the record names this method, not its line.
        record = access_logger.makeRecord(
            access_logger.name,
            logging.INFO,
            _LOG_CODE.co_filename,
            _LOG_CODE.co_firstlineno,
            "%s %s%s %s",
            (scope["method"], scope["path"], query, status),
            None,
            _LOG_CODE.co_name,
            extra,
        )
        access_logger.handle(record)


_LOG_CODE = ServiceMiddleware.log.__code__


def _request_id(incoming: bytes | None) -> tuple[str, bytes]:
    """A request's id, as text and bytes: a well-formed incoming one, else a new one."""
    if incoming is not None and _VALID_REQUEST_ID.fullmatch(incoming):
        return incoming.decode("ascii"), incoming
    request_id = new_request_id()
    return request_id, request_id.encode("ascii")


def _declared(length: bytes | str | None) -> int | None:
    """A ``Content-Length`` as a number (``None``: absent or unreadable, then the body is
    counted as it streams)."""
    if length is None:
        return None
    try:
        return int(length)
    except ValueError:
        return None


def _has_body(
    scope: Scope, chunked: bool, length: bytes | str | None, declared: int | None
) -> bool:
    """Whether a request may bring a body to count. HTTP/1 frames a body with
    Content-Length or Transfer-Encoding: without either (or with a length of 0) there is
    none."""
    return (
        chunked
        or (length is not None and declared != 0)
        or scope.get("http_version") not in _HTTP_1
    )


def _clients_error(exc: Exception, path: str) -> PlatformError | None:
    """What ``exc`` tells the client: itself when it is one of ours, the 422 of a value
    PostgreSQL refused as data (:func:`~shared.errors.refused_value`), else nothing (a
    generic 500; the error is logged with its traceback)."""
    if isinstance(exc, PlatformError):
        return exc
    refused = refused_value(exc)
    if refused is None:
        error_logger.exception("unhandled error", extra={"path": path}, exc_info=exc)
    return refused


def _internal_error() -> DirectAnswer:
    """The generic 500 (in the current error style)."""
    body = error_body(PlatformError("Internal server error."))
    headers = [(b"content-length", str(len(body)).encode()), (b"content-type", JSON.encode())]
    return DirectAnswer(500, headers, body)
