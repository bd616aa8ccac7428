"""OpenTelemetry traces across the services, their HTTP calls and the webhook queue.

Off unless the standard ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (and ``OTEL_SDK_DISABLED`` is not ``true``): then
:func:`configure_tracing` (called by every process's entry point) exports spans over
OTLP/HTTP in batches, with the SDK's other ``OTEL_*`` settings (sampler, batch sizes,
headers, ``OTEL_SERVICE_NAME``). While it is off :data:`tracer` is ``None``, each hook below
is one test of it, and the SDK and exporter are never imported.

Where spans come from:

- a request: :func:`server_span`, from :class:`shared.metrics.MetricsMiddleware` (every
  route) and the webhook intake's direct path, continuing the W3C ``traceparent`` the
  request brought (through the gateway, which passes it on);
- a service-to-service call: :func:`client_span` in :mod:`shared.http`'s transport, which
  sends the ``traceparent`` of the call on;
- a queued job: the intake writes :func:`current_traceparent` into the event's job and
  the worker continues it with :func:`consumer_span`, so a delivery's intake, its job and
  the worker's call to tracking are one trace.

While a span is current its trace id is in :data:`shared.logging.trace_id_var`, which every
log line carries beside the request id.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.types import Scope

from shared.logging import trace_id_var

__all__ = [
    "configure_tracing",
    "consumer_span",
    "current_traceparent",
    "end_server_span",
    "server_span",
    "tracer",
    "use",
]

tracer: Tracer | None = None
"""The platform's tracer; ``None`` while tracing is off."""

_PROPAGATOR = TraceContextTextMapPropagator()
_CARRIED = (b"traceparent", b"tracestate")


def endpoint(environ: Mapping[str, str]) -> str | None:
    """Where spans go, from the OTel SDK's own variables; ``None``: tracing is off."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    found = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    return (found.strip() or None) if found else None


def configure_tracing(
    service_name: str, environ: Mapping[str, str] = os.environ
) -> TracerProvider | None:
    """Export this process's spans over OTLP/HTTP when :func:`endpoint` names a collector
    (``service.name`` is ``OTEL_SERVICE_NAME`` when set, else ``service_name``): the
    provider, ``None`` when tracing is off. Spans still queued are sent when the process
    exits. The exporter reads its settings from the process's environment."""
    if endpoint(environ) is None:
        use(None)
        return None
    # Imported only here: the SDK and the exporter (protobuf) cost ~150 ms and a few MB.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SDKTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; attributes
    # given here would win over them.
    named = {} if environ.get("OTEL_SERVICE_NAME") else {"service.name": service_name}
    provider = SDKTracerProvider(resource=Resource.create(named))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    use(provider)
    return provider


def use(provider: TracerProvider | None) -> None:
    """Trace with ``provider`` (tests give one with an in-memory exporter); ``None``: off."""
    global tracer
    tracer = None if provider is None else provider.get_tracer("platform")


def _context(carrier: Mapping[str, str]) -> Context:
    """The remote parent a ``traceparent``/``tracestate`` pair names, or an empty context
    (a new trace) when there is none or it is malformed: never the caller's own."""
    return _PROPAGATOR.extract(carrier)


@contextlib.contextmanager
def _current(
    name: str, kind: SpanKind, context: Context | None, attributes: dict[str, Any]
) -> Iterator[Span]:
    """A span made current (its trace id in the logs) until the block ends; an error
    escaping the block is recorded on it."""
    assert tracer is not None
    with tracer.start_as_current_span(
        name, context=context, kind=kind, attributes=attributes
    ) as span:
        token = trace_id_var.set(format(span.get_span_context().trace_id, "032x"))
        try:
            yield span
        finally:
            trace_id_var.reset(token)


@contextlib.contextmanager
def server_span(scope: Scope) -> Iterator[Span]:
    """The span of one HTTP request (tracing on), a child of the ``traceparent`` it
    brought. Named by its method until :func:`end_server_span` names its route."""
    carrier = {
        name.decode("latin-1"): value.decode("latin-1")
        for name, value in scope["headers"]
        if name in _CARRIED
    }
    attributes = {"http.request.method": scope["method"], "url.path": scope["path"]}
    with _current(scope["method"], SpanKind.SERVER, _context(carrier), attributes) as span:
        yield span


def end_server_span(span: Span, scope: Scope, route: str, status: int) -> None:
    """What a request's span learns once it is answered: its route template, its status
    (5xx is an error) and the request id."""
    span.update_name(f"{scope['method']} {route}")
    span.set_attribute("http.route", route)
    span.set_attribute("http.response.status_code", status)
    request_id = scope.get("state", {}).get("request_id")
    if request_id:
        span.set_attribute("request_id", request_id)
    if status >= 500:
        span.set_status(Status(StatusCode.ERROR))


@contextlib.contextmanager
def client_span(method: str, url: str, headers: MutableMapping[str, str]) -> Iterator[Span]:
    """The span of one outgoing HTTP call (tracing on); its ``traceparent`` is written
    into ``headers``."""
    attributes = {"http.request.method": method, "url.full": url}
    with _current(method, SpanKind.CLIENT, None, attributes) as span:
        _PROPAGATOR.inject(headers)
        yield span


def current_traceparent() -> str | None:
    """The current span's ``traceparent``, to carry it through a queue (``None``: tracing
    off or no span)."""
    if tracer is None:
        return None
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier.get("traceparent")


def consumer_span(
    name: str, traceparent: str | None, attributes: dict[str, Any]
) -> contextlib.AbstractContextManager[Span | None]:
    """The span of one try of a queued job, a child of the span that queued it
    (``traceparent``); nothing while tracing is off."""
    if tracer is None:
        return contextlib.nullcontext()
    carrier = {"traceparent": traceparent} if traceparent else {}
    return _current(name, SpanKind.CONSUMER, _context(carrier), attributes)
