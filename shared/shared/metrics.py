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

import bisect
import itertools
import logging
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    start_http_server,
)
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString
from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared import tracing

__all__ = ["HTTP", "TOKEN_VERIFICATIONS", "observe_request", "start_metrics_server"]

logger = logging.getLogger(__name__)

UNMATCHED = "<unmatched>"
"""The route label of a request no route matched (raw paths would be unbounded)."""

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class Timings(Collector):
    """A histogram of durations by label values, in plain lists: prometheus_client's
    ``Histogram`` takes a lock for the sum and for a bucket at each observation (~3 µs,
    and a webhook delivery, the platform's hottest path, observed twice gained a tenth of
    its instructions, counted with callgrind). Written by one thread, the event loop's;
    a scrape (the metrics server's thread) reads a copy, in which an observation being
    made may show half-written, as with prometheus_client's own metrics.

    ``keep``: how many of the labels the histogram keeps (the others are summed over at a
    scrape); ``count_name``: a counter of the observations by every label, when given.
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: tuple[str, ...] = (),
        *,
        keep: int | None = None,
        count_name: str = "",
        count_documentation: str = "",
        registry: CollectorRegistry | None = REGISTRY,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = labelnames
        self.keep = len(labelnames) if keep is None else keep
        self.count_name = count_name
        self.count_documentation = count_documentation
        self.bounds = tuple(float(b) for b in Histogram.DEFAULT_BUCKETS)  # ends with +Inf
        self._le: list[str] = [
            floatToGoString(b)  # type: ignore[no-untyped-call]
            for b in self.bounds
        ]
        # label values -> [observations in each bucket (not cumulative)..., their sum]
        self._series: dict[tuple[str, ...], list[float]] = {}
        if registry is not None:
            registry.register(self)

    def observe(self, labels: tuple[str, ...], seconds: float) -> None:
        series = self._series.get(labels)
        if series is None:
            series = self._series[labels] = [0.0] * (len(self.bounds) + 1)
        series[bisect.bisect_left(self.bounds, seconds)] += 1
        series[-1] += seconds

    def collect(self) -> Iterator[Metric]:
        snapshot = [(labels, list(series)) for labels, series in list(self._series.items())]
        if self.count_name:
            counts = CounterMetricFamily(
                self.count_name, self.count_documentation, labels=self.labelnames
            )
            for labels, series in snapshot:
                counts.add_metric(labels, sum(series[:-1]))
            yield counts
        merged: dict[tuple[str, ...], list[float]] = {}
        for labels, series in snapshot:
            total = merged.setdefault(labels[: self.keep], [0.0] * len(series))
            for index, value in enumerate(series):
                total[index] += value
        histogram = HistogramMetricFamily(
            self.name, self.documentation, labels=self.labelnames[: self.keep]
        )
        for labels, series in merged.items():
            cumulative = itertools.accumulate(series[:-1])
            buckets = list(zip(self._le, cumulative, strict=True))
            histogram.add_metric(labels, buckets, series[-1])
        yield histogram


class RequestMetrics(Timings):
    """HTTP requests: counted by method, route template and status class, timed by method
    and route template, and the number being answered."""

    def __init__(self, registry: CollectorRegistry | None = REGISTRY) -> None:
        self.in_flight = 0
        super().__init__(
            "platform_http_request_duration_seconds",
            "Time from a request's arrival to the end of its answer, by method and route.",
            ("method", "route", "status"),
            keep=2,
            count_name="platform_http_requests_total",
            count_documentation="HTTP requests answered, by method, route template and status"
            " class.",
            registry=registry,
        )

    def collect(self) -> Iterator[Metric]:
        yield from super().collect()
        yield GaugeMetricFamily(
            "platform_http_requests_in_flight", "HTTP requests being answered.", self.in_flight
        )


HTTP = RequestMetrics()

TOKEN_VERIFICATIONS = Counter(
    "platform_token_verifications_total",
    "Bearer tokens checked, by outcome (accepted, expired, revoked, bad_signature, ...).",
    ["outcome"],
)
API_KEY_EXCHANGES = Counter(
    "platform_api_key_exchanges_total",
    "ZENKEY_ bearers not known to this process: asked about (identity's API-key login), or"
    " limited (429 from the per-address limit, identity not asked).",
    ["outcome"],
)
LOGIN_THROTTLES = Counter(
    "platform_login_throttled_total", "Logins refused by the login throttle (429)."
)

DB_POOL_IN_USE = Gauge(
    "platform_db_pool_connections_in_use", "Database connections checked out of the pool."
)
DB_POOL_OPEN = Gauge("platform_db_pool_connections_open", "Database connections open.")
DB_STATEMENT_LATENCY = Timings(
    "platform_db_statement_duration_seconds", "Time PostgreSQL took to answer a statement."
)
REDIS_COMMAND_LATENCY = Timings(
    "platform_redis_command_duration_seconds",
    "Time Redis took to answer a command sent through redis-py, by command.",
    ("command",),
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


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    """Count one answered request (a path that answers without the ASGI stack, as the
    webhook intake's direct one, calls this itself)."""
    label = method if method in _METHODS else "OTHER"
    HTTP.observe((label, route, _STATUS_CLASSES[status // 100]), seconds)


_STATUS_CLASSES = [f"{n}xx" for n in range(10)]


def route_template(scope: Scope) -> str:
    """The path template of the route that answered (``/api/v1/runs/{run_id}``), without
    its parameters' convertors (``{run_id:uuid_param}``), which are not its name."""
    route = scope.get("route")
    path = getattr(route, "path_format", None)
    return path if isinstance(path, str) else UNMATCHED


class MetricsMiddleware:
    """Counts every HTTP request by route template and status class, times it and keeps
    the in-flight gauge; while tracing is on, serves it inside its span
    (:func:`shared.tracing.server_span`). Outermost in
    :func:`shared.app.create_service_app`, so answers the inner middleware gives itself
    (413, 500) count too, and their log lines carry the trace id."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if tracing.tracer is not None:
            with tracing.server_span(scope) as span:
                status = await self._observed(scope, receive, send)
                tracing.end_server_span(span, scope, route_template(scope), status)
            return
        await self._observed(scope, receive, send)

    async def _observed(self, scope: Scope, receive: Receive, send: Send) -> int:
        """Serve the request, counted and timed; its answer's status."""
        status = 500
        begun = time.perf_counter()

        async def counted_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        HTTP.in_flight += 1
        try:
            await self.app(scope, receive, counted_send)
        finally:
            HTTP.in_flight -= 1
            observe_request(
                scope["method"], route_template(scope), status, time.perf_counter() - begun
            )
        return status


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
            DB_STATEMENT_LATENCY.observe((), time.perf_counter() - started)

    event.listen(sync_engine, "before_cursor_execute", before)
    event.listen(sync_engine, "after_cursor_execute", after)


class TimedRedis(Redis):
    """redis-py's client, timing each command it sends (redis-py has no hooks); a
    pipeline is timed as one command, ``MULTI`` (a transaction) or ``PIPELINE``. The
    commands :mod:`shared.redis_pipe` writes itself are not timed."""

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Pipeline:
        return TimedPipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        begun = time.perf_counter()
        try:
            return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        finally:
            name = args[0] if args else "?"
            command = _COMMANDS.get(name) or _command(name)
            REDIS_COMMAND_LATENCY.observe((command,), time.perf_counter() - begun)


class TimedPipeline(Pipeline):
    """redis-py's pipeline, timed as one command when it is sent (:class:`TimedRedis`)."""

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        begun = time.perf_counter()
        try:
            return await super().execute(raise_on_error)
        finally:
            command = "MULTI" if self.is_transaction else "PIPELINE"
            REDIS_COMMAND_LATENCY.observe((command,), time.perf_counter() - begun)


_COMMANDS: dict[str | bytes, str] = {}


def _command(name: str | bytes) -> str:
    """A command's label (the code's own names: a bounded set), kept for the next time."""
    command = name.decode() if isinstance(name, bytes) else str(name)
    _COMMANDS[name] = command.upper()
    return _COMMANDS[name]
