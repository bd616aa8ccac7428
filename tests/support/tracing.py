"""Spans recorded in memory while a test runs (the SDK's own exporter for tests), and a
stand-in OTLP/HTTP collector for processes that export theirs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from shared import tracing


@contextmanager
def recording() -> Iterator[InMemorySpanExporter]:
    """Tracing on, every span ended kept by the exporter yielded; off again after."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    try:
        yield exporter
    finally:
        tracing.use(None)
        provider.shutdown()


def trace_id(span: ReadableSpan) -> str:
    return format(span.context.trace_id, "032x")


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == name]


def parent_id(span: ReadableSpan) -> str | None:
    """The span id of ``span``'s parent (16 hex digits), ``None`` for a trace's root."""
    return None if span.parent is None else format(span.parent.span_id, "016x")


def span_id(span: ReadableSpan) -> str:
    return format(span.context.span_id, "016x")


class Collected:
    """What a :func:`collector` was sent: each export's path and request."""

    def __init__(self) -> None:
        self.exports: list[tuple[str, ExportTraceServiceRequest]] = []
        self.lock = threading.Lock()

    def spans(self) -> list[tuple[str, str, str, str]]:
        """(service.name, span name, trace id, parent span id) of every span received."""
        found = []
        with self.lock:
            requests = [request for _, request in self.exports]
        for request in requests:
            for resource_spans in request.resource_spans:
                attributes = resource_spans.resource.attributes
                service = {a.key: a.value.string_value for a in attributes}["service.name"]
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        parent = span.parent_span_id.hex()
                        found.append((service, span.name, span.trace_id.hex(), parent))
        return found


@contextmanager
def collector() -> Iterator[tuple[str, Collected]]:
    """An OTLP/HTTP collector on a free local port (its URL, what it received): it takes
    every export and answers 200."""
    collected = Collected()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            with collected.lock:
                collected.exports.append((self.path, ExportTraceServiceRequest.FromString(body)))
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", collected
    finally:
        server.shutdown()
        server.server_close()
