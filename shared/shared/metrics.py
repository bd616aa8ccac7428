"""Prometheus metrics of one process, served on a port of their own (``METRICS_PORT``).

Every metric lives in prometheus_client's default registry: one per process, in memory
(no multiprocess files, so read-only containers and replicas are fine: each process
exports its own series and the scraper labels the instance). Services and the webhook
worker start :func:`start_metrics_server` when ``metrics_port`` is set; it is
prometheus_client's own HTTP server in a daemon thread, so it answers the same way under
uvicorn and under arq, and keeps answering while the event loop is busy. It is never
routed by the gateway. The names and their meaning: ``docs/operations.md``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from prometheus_client import Counter, Gauge, Histogram, start_http_server
from redis.asyncio import Redis
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)

UNMATCHED = "<unmatched>"
"""The route label of a request no route matched (raw paths would be unbounded)."""

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

HTTP_REQUESTS = Counter(
    "platform_http_requests_total",
    "HTTP requests answered, by method, route template and status class.",
    ["method", "route", "status"],
)
HTTP_LATENCY = Histogram(
    "platform_http_request_duration_seconds",
    "Time from a request's arrival to the end of its answer, by method and route template.",
    ["method", "route"],
)
HTTP_IN_FLIGHT = Gauge("platform_http_requests_in_flight", "HTTP requests being answered.")

TOKEN_VERIFICATIONS = Counter(
    "platform_token_verifications_total",
    "Bearer tokens checked, by outcome (accepted, expired, revoked, bad_signature, ...).",
    ["outcome"],
)
LOGIN_THROTTLES = Counter(
    "platform_login_throttled_total", "Logins refused by the login throttle (429)."
)

DB_POOL_IN_USE = Gauge(
    "platform_db_pool_connections_in_use", "Database connections checked out of the pool."
)
DB_POOL_OPEN = Gauge("platform_db_pool_connections_open", "Database connections open.")
DB_STATEMENT_LATENCY = Histogram(
    "platform_db_statement_duration_seconds", "Time PostgreSQL took to answer a statement."
)
REDIS_COMMAND_LATENCY = Histogram(
    "platform_redis_command_duration_seconds",
    "Time Redis took to answer a command sent through redis-py, by command.",
    ["command"],
)


def start_metrics_server(port: int, host: str) -> bool:
    """Serve this process's metrics at ``http://host:port/metrics`` from a daemon thread
    (nothing to stop: it ends with the process). A port already taken (a second copy of a
    process, started with its environment) is logged, and the process runs without its
    metrics rather than not at all: ``False`` then."""
    try:
        start_http_server(port, addr=host)
    except OSError as exc:
        logger.error("metrics not served: %s:%s: %s", host, port, exc.strerror or exc)
        return False
    return True


def status_class(status: int) -> str:
    """``2xx``, ``4xx``...: the status label (single statuses would multiply series)."""
    return f"{status // 100}xx"


# (method, route, status // 100) -> its two series: labels() costs more than the update
# itself. Bounded: a few methods, the routes' templates, five classes.
_SERIES: dict[tuple[str, str, int], tuple[Any, Any]] = {}


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    """Count one answered request (a path that answers without the ASGI stack, as the
    webhook intake's direct one, calls this itself)."""
    key = (method, route, status // 100)
    series = _SERIES.get(key)
    if series is None:
        label = method if method in _METHODS else "OTHER"
        series = (
            HTTP_REQUESTS.labels(label, route, status_class(status)),
            HTTP_LATENCY.labels(label, route),
        )
        if method in _METHODS:  # any other method shares OTHER's series, uncached
            _SERIES[key] = series
    series[0].inc()
    series[1].observe(seconds)


def route_template(scope: Scope) -> str:
    """The path template of the route that answered (``/api/v1/runs/{run_id}``)."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else UNMATCHED


class MetricsMiddleware:
    """Counts every HTTP request by route template and status class, times it and keeps
    the in-flight gauge. Outermost in :func:`shared.app.create_service_app`, so answers
    the inner middleware gives itself (413, 500) count too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        begun = time.perf_counter()

        async def counted_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        HTTP_IN_FLIGHT.inc()
        try:
            await self.app(scope, receive, counted_send)
        finally:
            HTTP_IN_FLIGHT.dec()
            observe_request(
                scope["method"], route_template(scope), status, time.perf_counter() - begun
            )


def instrument_engine(engine: AsyncEngine) -> None:
    """Pool use (connections open and checked out) and statement latency of ``engine``."""
    sync_engine = engine.sync_engine
    pool = sync_engine.pool

    event.listen(pool, "connect", lambda *_: DB_POOL_OPEN.inc())
    event.listen(pool, "close", lambda *_: DB_POOL_OPEN.dec())
    event.listen(pool, "close_detached", lambda *_: DB_POOL_OPEN.dec())
    event.listen(pool, "checkout", lambda *_: DB_POOL_IN_USE.inc())
    event.listen(pool, "checkin", lambda *_: DB_POOL_IN_USE.dec())

    def before(
        conn: Any, cursor: Any, statement: Any, params: Any, context: Any, many: Any
    ) -> None:
        conn.info["platform.statement_started"] = time.perf_counter()

    def after(conn: Any, *_: Any) -> None:
        started = conn.info.pop("platform.statement_started", None)
        if started is not None:
            DB_STATEMENT_LATENCY.observe(time.perf_counter() - started)

    event.listen(sync_engine, "before_cursor_execute", before)
    event.listen(sync_engine, "after_cursor_execute", after)


class TimedRedis(Redis):
    """redis-py's client, timing each command it sends (redis-py has no hooks). Commands
    sent in a pipeline, and those :mod:`shared.redis_pipe` writes itself, are not timed."""

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        begun = time.perf_counter()
        try:
            return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        finally:
            _redis_series(args[0] if args else "?").observe(time.perf_counter() - begun)


_REDIS_SERIES: dict[str | bytes, Any] = {}


def _redis_series(name: str | bytes) -> Any:
    """The latency series of the command ``name`` (the code's own names: a bounded set)."""
    series = _REDIS_SERIES.get(name)
    if series is None:
        command = name.decode() if isinstance(name, bytes) else str(name)
        series = _REDIS_SERIES[name] = REDIS_COMMAND_LATENCY.labels(command.upper())
    return series
