"""Spans recorded in memory while a test runs (the SDK's own exporter for tests)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

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
