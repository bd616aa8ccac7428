"""Each process's Prometheus metrics, read from the exposition after known traffic."""

from __future__ import annotations

import socket
import urllib.request
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from prometheus_client import CollectorRegistry
from redis.asyncio import Redis
from sqlalchemy import text
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from shared.metrics import UNMATCHED, Timings, start_metrics_server
from shared.redis import Keys
from shared.routing import path_param
from shared.settings import ServiceSettings
from shared.throttle import LoginThrottle, LoginThrottled, LoginThrottleSettings
from tests.shared.conftest import GADGET, gadget_routes, service_client
from tests.support.databases import Databases
from tests.support.metrics import sample
from tests.support.redis_server import free_port

ROUTE = GADGET
REQUESTS = "platform_http_requests_total"


async def get_gadget(request: Request) -> Response:
    gadget_id = path_param(request, "gadget_id", uuid.UUID)
    async with request.state.engine.connect() as connection:
        await connection.execute(text("SELECT 1"))
    return JSONResponse({"id": str(gadget_id)})


ROUTES = gadget_routes(get_gadget)


@pytest.fixture(scope="module")
async def client(databases: Databases, redis_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with service_client(databases, redis_url, ROUTES) as client:
        yield client


async def test_requests_count_by_route_template_and_status_class(client):
    def count(route: str, status: str, method: str = "GET") -> float:
        return sample(REQUESTS, method=method, route=route, status=status)

    before = (count(ROUTE, "2xx"), count(ROUTE, "4xx"), count(UNMATCHED, "4xx"))
    for _ in range(3):
        assert (await client.get(f"/api/v1/gadgets/{uuid.uuid4()}")).status_code == 200
    assert (await client.get("/api/v1/gadgets/not-a-uuid")).status_code == 422
    assert (await client.get("/api/v1/no/such/path")).status_code == 404

    assert count(ROUTE, "2xx") - before[0] == 3
    assert count(ROUTE, "4xx") - before[1] == 1
    assert count(UNMATCHED, "4xx") - before[2] == 1
    assert sample("platform_http_request_duration_seconds_count", method="GET", route=ROUTE) >= 4
    assert sample("platform_http_requests_in_flight") == 0


async def test_an_unhandled_error_counts_as_5xx(client):
    before = sample(REQUESTS, method="GET", route="/api/v1/gadget-boom", status="5xx")
    assert (await client.get("/api/v1/gadget-boom")).status_code == 500
    assert sample(REQUESTS, method="GET", route="/api/v1/gadget-boom", status="5xx") == before + 1


async def test_database_statements_and_pool_use_are_measured(client):
    statements = sample("platform_db_statement_duration_seconds_count")
    assert (await client.get(f"/api/v1/gadgets/{uuid.uuid4()}")).status_code == 200
    assert sample("platform_db_statement_duration_seconds_count") > statements
    assert sample("platform_db_pool_connections_in_use") == 0
    assert sample("platform_db_pool_connections_open") >= 1


async def test_bad_tokens_count_by_outcome(client):
    before = sample("platform_token_verifications_total", outcome="invalid")
    response = await client.get(
        f"/api/v1/gadgets/{uuid.uuid4()}", headers={"Authorization": "Bearer not.a.token"}
    )
    assert response.status_code == 200  # the route asks for no principal
    assert sample("platform_token_verifications_total", outcome="invalid") == before + 1


async def test_login_throttles_and_redis_commands_are_counted(
    redis_client: Redis, redis_namespace: str
):
    settings = LoginThrottleSettings(login_account_failure_threshold=1)
    throttle = LoginThrottle(redis_client, Keys(redis_namespace), settings)
    throttled = sample("platform_login_throttled_total")
    commands = sample("platform_redis_command_duration_seconds_count", command="GET")
    await redis_client.get(f"{redis_namespace}:nothing")
    await throttle.failed("alice", "10.0.0.1")
    with pytest.raises(LoginThrottled):
        await throttle.check("alice", "10.0.0.2")
    assert sample("platform_login_throttled_total") == throttled + 1
    assert sample("platform_redis_command_duration_seconds_count", command="GET") == commands + 1


async def test_a_pipeline_is_timed_as_one_command(redis_client: Redis, redis_namespace: str):
    def count(command: str) -> float:
        return sample("platform_redis_command_duration_seconds_count", command=command)

    before = count("MULTI"), count("PIPELINE"), count("SET")
    async with redis_client.pipeline(transaction=True) as tr:
        tr.set(f"{redis_namespace}:a", 1)
        tr.set(f"{redis_namespace}:b", 2)
        assert await tr.execute() == [True, True]
    async with redis_client.pipeline(transaction=False) as pipe:
        pipe.get(f"{redis_namespace}:a")
        assert await pipe.execute() == [b"1"]
    assert (count("MULTI"), count("PIPELINE"), count("SET")) == (
        before[0] + 1,
        before[1] + 1,
        before[2],
    )


def test_the_metrics_server_serves_the_exposition_on_its_own_port():
    port = free_port()
    assert start_metrics_server(port, "127.0.0.1") is True
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    assert "# TYPE platform_http_requests_total counter" in text


def test_a_taken_metrics_port_is_logged_and_the_process_goes_on(caplog):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert start_metrics_server(port, "127.0.0.1") is False
    assert f"metrics not served: 127.0.0.1:{port}" in caplog.text


def test_metrics_port_is_off_by_default():
    assert ServiceSettings().metrics_port == 0


def test_timings_are_a_histogram_in_the_exposition_summed_over_the_labels_not_kept():
    registry = CollectorRegistry()
    timings = Timings(
        "t_seconds", "Times.", ("a", "b"), keep=1, count_name="t_total", registry=registry
    )
    for labels, seconds in ((("x", "1"), 0.003), (("x", "2"), 0.2), (("x", "1"), 20.0)):
        timings.observe(labels, seconds)

    def value(name: str, **labels: str) -> float:
        return sample(name, registry=registry, **labels)

    assert [value("t_seconds_bucket", a="x", le=le) for le in ("0.005", "0.25", "10.0")] == [
        1,
        2,
        2,
    ]
    assert value("t_seconds_bucket", a="x", le="+Inf") == value("t_seconds_count", a="x") == 3
    assert value("t_seconds_sum", a="x") == pytest.approx(20.203)
    assert (value("t_total", a="x", b="1"), value("t_total", a="x", b="2")) == (2, 1)
