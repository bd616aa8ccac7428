"""TRACE through the real gateway, with the real services behind it: nginx refuses TRACE
before it picks a location, and the gateway answers it as the path's service answers a
method none of its routes takes (its 405 with the path's ``Allow``, or its 404)."""

from __future__ import annotations

import http.server
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.routing import Route

from agent_accounts.app import create_app as create_agent_app
from deploy.config import load_stack
from deploy.coverage import PARAMETER, SAMPLE_PARAMETER
from deploy.gateway.docs import service_app
from deploy.gateway.locations import NO_ROUTE_METHOD
from deploy.gateway.openapi import route_owner
from deploy.gateway.render import PROBES, local_target, render
from deploy.local.gateway import worker_user
from shared.errors import NO_SUCH_ENDPOINT
from tests.agent_accounts.conftest import make_settings
from tests.deploy.test_gateway import (
    declare_body,
    free_offset,
    gateway_without_upstreams,
    nginx_test,
)
from tests.deploy.test_gateway_forwarded import upstream_on
from tests.support.asgi import served

STACK = load_stack()
METHOD_NOT_ALLOWED = {"detail": "Method Not Allowed"}
NOT_FOUND = {
    "platform": {"detail": ["KeyError", NO_SUCH_ENDPOINT]},
    "agent": {"detail": "Not Found"},
}


@pytest.fixture
def database_service() -> str:
    """``database_url`` is at agent_accounts's head (the one service run with its lifespan)."""
    return "agent_accounts"


@pytest.fixture
async def services(
    tmp_path: Path, database_url: str, redis_url: str, redis_namespace: str
) -> AsyncIterator[dict[str, str]]:
    """Every web service on its port of a free offset, and the gateway in front of them:
    entrypoint name -> the gateway's URL (service name -> its own URL under the service's
    name). The platform's services run without their lifespan (routing and errors need
    none); agent-accounts, whose authentication reads its state first, with it."""
    offset = free_offset()
    urls: dict[str, str] = {}
    async with AsyncExitStack() as stack:
        for service in STACK.web_services:
            port = service.replica_ports(offset)[0]
            if service.module == "agent_accounts":
                settings = make_settings(database_url, redis_url, redis_namespace)
                served_app = served(create_agent_app(settings), port)
            else:
                served_app = served(service_app(service.module), port, lifespan="off")
            urls[service.name] = await stack.enter_async_context(served_app)
        ports = stack.enter_context(gateway_without_upstreams(tmp_path / "gw", port_offset=offset))
        yield urls | {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}


def test_no_service_route_takes_the_method_trace_is_asked_with():
    """Nor TRACE, nor any method: a route without methods (an ASGI app) takes them all."""
    for service in STACK.web_services:
        for route in service_app(service.module).routes:
            assert isinstance(route, Route), (service.name, route)
            assert route.methods, (service.name, route.path)
            assert not {NO_ROUTE_METHOD, "TRACE"} & route.methods, (service.name, route.path)


def test_where_a_service_takes_every_path_a_trace_anywhere_else_asks_it(tmp_path):
    """A stack file of one's own may route every path of an entrypoint to a service: the
    gateway's own paths keep their answers, every other path is the service's."""
    services = tuple(
        s.model_copy(update={"routes": ("/",)}) if s.name == "agent-accounts" else s
        for s in STACK.services
    )
    stack = replace(STACK, services=services)
    config = render(stack, local_target(stack, port_offset=1000, user=worker_user()))
    found = re.search(r"map \$uri \$gateway_trace_agent \{\n(.*?)\n    \}", config, re.S)
    assert found is not None
    entries = [line.strip() for line in found[1].splitlines()]
    assert entries[-1] == "default /_gateway/trace/agent-accounts;"
    assert '"~^/metrics/" @not_found;' in entries
    assert '"~^/api/v1/agents/" /api/v1/agents;' in entries
    assert nginx_test(config, tmp_path).returncode == 0


def served_paths(entrypoint: str) -> list[tuple[str, str, str]]:
    """(service, path at the gateway, path at the service) of every route the entrypoint
    sends to its service, parameters filled in, and of every service's probes."""
    paths: dict[tuple[str, str, str], None] = {}  # in order, once (a route per method)
    for service in STACK.web_services:
        if service.entrypoint != entrypoint:
            continue
        for route in service_app(service.module).routes:
            assert isinstance(route, Route)
            path = PARAMETER.sub(SAMPLE_PARAMETER, route.path)
            if route_owner(STACK, STACK.entrypoint(entrypoint), path) == service.name:
                paths[service.name, path, path] = None
        for probe in PROBES:
            paths[service.name, f"/_services/{service.name}/{probe}", f"/{probe}"] = None
    return list(paths)


@pytest.mark.parametrize("entrypoint", ["platform", "agent"])
async def test_trace_on_a_served_path_is_the_services_405_with_its_allow(services, entrypoint):
    paths = served_paths(entrypoint)
    async with httpx.AsyncClient(timeout=5, trust_env=False) as client:
        for service, path, own in paths:
            answer = await client.request("TRACE", f"{services[entrypoint]}{path}")
            # The service's own 405 for the path, asked directly.
            direct = await client.request("TRACE", f"{services[service]}{own}")
            assert direct.status_code == 405, (service, own)
            assert answer.status_code == 405, path
            assert answer.headers["allow"] == direct.headers["allow"], path
            assert answer.json() == METHOD_NOT_ALLOWED, path
            assert answer.headers["content-type"] == "application/json"
            assert answer.headers["x-request-id"]
    assert len(paths) > {"platform": 160, "agent": 40}[entrypoint]


async def test_trace_names_the_methods_of_the_path_and_keeps_the_request_id(services):
    async with httpx.AsyncClient(timeout=5, trust_env=False) as client:
        answers = {
            path: await client.request(
                "TRACE", f"{services['platform']}{path}", headers={"X-Request-ID": "trace-1"}
            )
            for path in ("/api/v1/artifacts", f"/api/v1/runs/{SAMPLE_PARAMETER}", "/api/v1/login")
        }
        patch = await client.patch(f"{services['platform']}/api/v1/artifacts")
    assert {path: a.headers["allow"] for path, a in answers.items()} == {
        "/api/v1/artifacts": "GET, HEAD, POST",
        f"/api/v1/runs/{SAMPLE_PARAMETER}": "DELETE, GET, HEAD, PUT",
        "/api/v1/login": "POST",
    }
    assert answers["/api/v1/artifacts"].headers["allow"] == patch.headers["allow"]
    assert {a.headers["x-request-id"] for a in answers.values()} == {"trace-1"}


@pytest.mark.parametrize(
    ("entrypoint", "path"),
    [
        ("platform", "/api/v1/nope"),  # no service's prefix: the gateway's 404
        ("platform", "/api/v1/runs/x/y/z"),  # tracking's prefix, no route of tracking's
        ("platform", "/API/v1/runs"),  # prefixes are case-sensitive, as nginx's locations
        ("agent", "/api/v1/nope"),
        ("agent", "/api/v1/accounts/x/y/z"),
    ],
)
async def test_trace_where_no_route_matches_is_the_entrypoints_404(services, entrypoint, path):
    async with httpx.AsyncClient(timeout=5, trust_env=False) as client:
        answer = await client.request("TRACE", f"{services[entrypoint]}{path}")
        get = await client.get(f"{services[entrypoint]}{path}")
    assert (answer.status_code, get.status_code) == (404, 404)
    assert answer.json() == get.json() == NOT_FOUND[entrypoint]
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["x-request-id"]
    assert "allow" not in answer.headers


async def test_a_trace_with_a_body_is_answered_without_it(services):
    """The body is read and dropped, never passed on: the service gets no length it would
    wait for a body of."""
    url = f"{services['platform']}/api/v1/artifacts"

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"name": '
        yield b'"x"}'

    async with httpx.AsyncClient(timeout=5, trust_env=False) as client:
        sized = await client.request("TRACE", url, content=b"x" * 100_000)
        chunked = await client.request("TRACE", url, content=chunks())
    for answer in (sized, chunked):
        assert answer.status_code == 405
        assert answer.headers["allow"] == "GET, HEAD, POST"
        assert answer.json() == METHOD_NOT_ALLOWED
    # A body over the limit is refused before it is read, as on any other method.
    port = int(services["platform"].rsplit(":", 1)[1])
    too_large = declare_body(port, "/api/v1/artifacts", 10 << 20, method="TRACE")
    assert too_large.startswith(b"HTTP/1.1 413 ")
    assert b'"PayloadTooLarge"' in too_large


class Recorder(http.server.BaseHTTPRequestHandler):
    """An upstream that notes each request's method, path and headers, and answers 405."""

    seen: list[tuple[str, str, dict[str, str]]] = []

    def do_PROPFIND(self) -> None:
        self.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        self.send_response(405)
        self.send_header("Allow", "GET")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def tracking_recorder() -> Iterator[tuple[int, list[tuple[str, str, dict[str, str]]]]]:
    """A recorder on tracking's port of a free offset: (offset, what it saw)."""
    offset = free_offset()
    seen: list[tuple[str, str, dict[str, str]]] = []
    handler = type("TrackingRecorder", (Recorder,), {"seen": seen})
    with upstream_on(STACK.service("tracking").replica_ports(offset)[0], handler):
        yield offset, seen


def test_the_service_is_asked_without_trace_the_body_or_the_clients_headers(
    tmp_path, tracking_recorder
):
    offset, seen = tracking_recorder
    with (
        gateway_without_upstreams(tmp_path / "gw", port_offset=offset) as ports,
        httpx.Client(timeout=5, trust_env=False) as client,
    ):
        url = f"http://127.0.0.1:{ports['platform']}"
        answers = [
            client.request(
                "TRACE",
                f"{url}/api/v1/runs?name=a%20b",
                content=b"secret body",
                headers={"Authorization": "Bearer t", "Cookie": "s=1", "X-Request-ID": "r-1"},
            ),
            client.request("TRACE", f"{url}/_services/tracking/ready"),
        ]
    assert [answer.status_code for answer in answers] == [405, 405]
    assert [(method, path) for method, path, _ in seen] == [
        (NO_ROUTE_METHOD, "/api/v1/runs?name=a%20b"),
        (NO_ROUTE_METHOD, "/ready"),
    ]
    headers = seen[0][2]
    assert not {"content-length", "transfer-encoding", "authorization", "cookie"} & set(headers)
    assert headers["x-request-id"] == "r-1"
    assert headers["x-forwarded-for"] == "127.0.0.1"
