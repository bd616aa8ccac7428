"""OpenTelemetry traces: a request continues the ``traceparent`` it brought, its calls to
other services carry theirs on, its log lines name the trace, and spans reach an OTLP
collector when one is configured; with none, nothing of it runs."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from opentelemetry.trace import SpanKind, StatusCode
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from shared import tracing
from shared.http import create_http_client
from shared.logging import JSONFormatter, TextFormatter, request_id_var, trace_id_var
from shared.routing import path_param
from shared.settings import ServiceSettings
from tests.shared.conftest import GADGET, gadget_routes, service_client
from tests.support.databases import Databases
from tests.support.tracing import collector, named, parent_id, span_id, trace_id

ROUTE = GADGET
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE}-{PARENT}-01"
logger = logging.getLogger("tests.gadgets")


class Lines(logging.Handler):
    """Log lines as the services write them (formatted while the request is served)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(JSONFormatter())
        self.lines: list[dict[str, object]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


@pytest.fixture
def lines() -> Iterator[Lines]:
    handler = Lines()
    watched = [logging.getLogger(name) for name in ("tests.gadgets", "platform.access")]
    for watched_logger in watched:
        watched_logger.addHandler(handler)
        watched_logger.setLevel(logging.INFO)
    yield handler
    for watched_logger in watched:
        watched_logger.removeHandler(handler)


class Upstream(httpx.AsyncBaseTransport):
    """Another service: it answers 200 and keeps the headers it was sent."""

    def __init__(self) -> None:
        self.headers: list[httpx.Headers] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.headers.append(request.headers)
        return httpx.Response(200, json={})


UPSTREAM = Upstream()


async def get_gadget(request: Request) -> Response:
    gadget_id = path_param(request, "gadget_id", uuid.UUID)
    logger.info("looking at gadget %s", gadget_id)
    settings = ServiceSettings(http_retries=0)
    async with create_http_client(settings, transport=UPSTREAM) as http:
        await http.get(f"http://upstream/api/v1/parts?gadget={gadget_id}")
    return JSONResponse({"id": str(gadget_id)})


ROUTES = gadget_routes(get_gadget)


@pytest.fixture(scope="module")
async def client(databases: Databases, redis_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with service_client(databases, redis_url, ROUTES) as client:
        yield client


async def test_a_request_continues_the_trace_it_brought(client, spans, lines):
    UPSTREAM.headers.clear()
    gadget = uuid.uuid4()
    response = await client.get(
        f"/api/v1/gadgets/{gadget}",
        headers={"traceparent": TRACEPARENT, "x-request-id": "req-trace-1"},
    )
    assert response.status_code == 200

    (server,) = named(spans, f"GET {ROUTE}")
    assert server.kind is SpanKind.SERVER
    assert trace_id(server) == TRACE
    assert parent_id(server) == PARENT
    assert server.attributes is not None
    assert server.attributes["http.route"] == ROUTE
    assert server.attributes["http.response.status_code"] == 200
    assert server.attributes["request_id"] == "req-trace-1"

    # The call to another service is the request's child, and carries its own span on.
    (call,) = named(spans, "GET")
    assert call.kind is SpanKind.CLIENT
    assert parent_id(call) == span_id(server)
    assert call.attributes is not None
    assert call.attributes["url.full"] == "http://upstream/api/v1/parts"  # no query
    sent = UPSTREAM.headers[-1]["traceparent"]
    assert sent == f"00-{TRACE}-{span_id(call)}-01"
    assert UPSTREAM.headers[-1]["x-request-id"] == "req-trace-1"

    # Every line of the request names its trace beside its request id.
    mine = [line for line in lines.lines if line.get("request_id") == "req-trace-1"]
    assert {line["logger"] for line in mine} == {"tests.gadgets", "platform.access"}
    assert all(line["trace_id"] == TRACE for line in mine)


@pytest.mark.parametrize("traceparent", [None, "00-nonsense", f"00-{'0' * 32}-{PARENT}-01"])
async def test_a_request_without_a_valid_traceparent_starts_a_trace(client, spans, traceparent):
    headers = {"traceparent": traceparent} if traceparent else {}
    response = await client.get(f"/api/v1/gadgets/{uuid.uuid4()}", headers=headers)
    assert response.status_code == 200
    (server,) = named(spans, f"GET {ROUTE}")
    assert parent_id(server) is None
    assert trace_id(server) not in (TRACE, "0" * 32)


async def test_a_failed_request_is_an_error_span(client, spans):
    assert (await client.get("/api/v1/gadget-boom")).status_code == 500
    (server,) = named(spans, "GET /api/v1/gadget-boom")
    assert server.status.status_code is StatusCode.ERROR
    assert server.attributes is not None
    assert server.attributes["http.response.status_code"] == 500


async def test_with_tracing_off_nothing_is_traced_or_sent(client, lines):
    assert tracing.tracer is None
    UPSTREAM.headers.clear()
    response = await client.get(
        f"/api/v1/gadgets/{uuid.uuid4()}",
        headers={"traceparent": TRACEPARENT, "x-request-id": "req-untraced"},
    )
    assert response.status_code == 200
    assert "traceparent" not in UPSTREAM.headers[-1]
    mine = [line for line in lines.lines if line.get("request_id") == "req-untraced"]
    assert len(mine) == 2
    assert not any("trace_id" in line for line in mine)


def test_text_lines_name_the_trace_beside_the_request_id():
    record = logging.makeLogRecord({"name": "x", "levelname": "INFO", "msg": "hello"})
    request_token, trace_token = request_id_var.set("abcd1234"), trace_id_var.set(TRACE)
    try:
        line = TextFormatter().format(record)
    finally:
        request_id_var.reset(request_token)
        trace_id_var.reset(trace_token)
    assert f"[abcd1234 trace={TRACE}] hello" in line


async def test_a_job_continues_the_trace_that_queued_it(spans):
    with tracing.consumer_span("process_event", TRACEPARENT, {"event_id": "e"}) as span:
        assert span is not None
        assert trace_id_var.get() == TRACE
    assert trace_id_var.get() is None
    (job,) = named(spans, "process_event")
    assert job.kind is SpanKind.CONSUMER
    assert trace_id(job) == TRACE
    assert parent_id(job) == PARENT


def test_off_a_job_has_no_span_and_nothing_to_carry():
    assert tracing.current_traceparent() is None
    with tracing.consumer_span("process_event", TRACEPARENT, {}) as span:
        assert span is None
        assert trace_id_var.get() is None


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ""}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "http://collector:4318"),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:4318/v1/traces",
            },
            "http://traces:4318/v1/traces",
        ),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, None),
    ],
)
def test_tracing_is_on_only_with_an_otlp_endpoint(environ, expected):
    assert tracing.endpoint(environ) == expected


def test_without_an_endpoint_tracing_stays_off():
    assert tracing.configure_tracing("gadgets", {}) is None
    assert tracing.tracer is None


def test_spans_reach_the_configured_collector_over_otlp(monkeypatch):
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    with collector() as (url, collected):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
        try:
            provider = tracing.configure_tracing("gadgets")
            assert provider is not None
            assert tracing.tracer is not None
            with tracing.consumer_span("process_event", TRACEPARENT, {"event_id": "e-1"}):
                pass
            provider.force_flush()  # type: ignore[attr-defined]
            provider.shutdown()  # type: ignore[attr-defined]
        finally:
            tracing.use(None)
    assert [path for path, _ in collected.exports] == ["/v1/traces"]
    assert collected.spans() == [("gadgets", "process_event", TRACE, PARENT)]
