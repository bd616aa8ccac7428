"""Only the gateway's X-Forwarded-For is believed: locally it connects to the services
from a loopback address of its own, which is the only one they trust; compose trusts the
gateway container's fixed address, Kubernetes the pod network its overlay names."""

from __future__ import annotations

import contextlib
import http.server
import ipaddress
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from deploy.config import load_stack
from deploy.gateway.render import LOCAL_SOURCE_ADDRESS
from deploy.local.environment import gateway_source_address
from deploy.local.options import parse_options
from shared.settings import ServiceSettings
from tests.deploy.test_environment import environment_of
from tests.deploy.test_gateway import free_offset, gateway_without_upstreams
from tests.deploy.test_k8s import render_overlay

REPO_ROOT = Path(__file__).resolve().parents[2]
STACK = load_stack()


class Recorder(http.server.BaseHTTPRequestHandler):
    """An upstream that notes each request's peer and X-Forwarded-For."""

    seen: list[tuple[str, str | None]] = []

    def do_GET(self) -> None:
        self.seen.append((self.client_address[0], self.headers.get("X-Forwarded-For")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def identity_upstream() -> Iterator[tuple[int, list[tuple[str, str | None]]]]:
    """A recorder on identity's port of a free offset: (offset, what it saw)."""
    offset = free_offset()
    port = STACK.service("identity").replica_ports(offset)[0]
    seen: list[tuple[str, str | None]] = []
    handler = type("IdentityRecorder", (Recorder,), {"seen": seen})
    with upstream_on(port, handler):
        yield offset, seen


@contextlib.contextmanager
def upstream_on(port: int, handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[None]:
    """``handler`` answering on ``port`` (a service's, behind the gateway), in a thread."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


def test_the_local_gateway_reaches_the_services_from_its_own_address(tmp_path, identity_upstream):
    offset, seen = identity_upstream
    with (
        gateway_without_upstreams(tmp_path / "gw", port_offset=offset) as ports,
        httpx.Client(timeout=5, trust_env=False) as client,
    ):
        answer = client.get(
            f"http://127.0.0.1:{ports['platform']}/api/v1/current-user",
            headers={"X-Forwarded-For": "203.0.113.9"},
        )
    assert answer.status_code == 200
    # From the gateway's address, naming the client it saw, not the one the client named.
    assert seen == [(LOCAL_SOURCE_ADDRESS, "127.0.0.1")]


def test_every_local_service_believes_only_the_gateways_address(tmp_path):
    assert gateway_source_address() == LOCAL_SOURCE_ADDRESS  # Linux: all of 127/8
    options = parse_options(["--data-dir", str(tmp_path)], {})
    for service in STACK.services:
        prefix = service.env_prefix or STACK.service(service.owner).env_prefix
        env = environment_of(options, service.name, {})
        assert env[f"{prefix}FORWARDED_ALLOW_IPS"] == LOCAL_SOURCE_ADDRESS, service.name


def test_compose_services_believe_only_the_gateway_container():
    compose = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    gateway = compose["services"]["gateway"]["networks"]["default"]["ipv4_address"]
    (network,) = compose["networks"]["default"]["ipam"]["config"]
    address = ipaddress.ip_address(gateway)
    # Its own: in the subnet, outside the range other containers are given addresses from.
    assert address in ipaddress.ip_network(network["subnet"])
    assert address not in ipaddress.ip_network(network["ip_range"])
    for name in ("identity", "tracking", "webhooks", "webhooks-worker", "agent-accounts"):
        environment = compose["services"][name]["environment"]
        trusted = {k: v for k, v in environment.items() if k.endswith("FORWARDED_ALLOW_IPS")}
        assert list(trusted.values()) == [gateway], name


@pytest.mark.parametrize(("overlay", "network"), [("laptop", "10.244.0.0/16"),
                                                  ("production", "10.0.0.0/14")])  # fmt: skip
def test_kubernetes_services_believe_only_their_overlays_pod_network(tmp_path, overlay, network):
    config_maps = {
        obj["metadata"]["name"].rsplit("-", 1)[0]: obj["data"]
        for obj in render_overlay(overlay, tmp_path)
        if obj["kind"] == "ConfigMap"
    }
    assert config_maps["platform-settings"]["FORWARDED_ALLOW_IPS"] == network
    assert config_maps["agent-accounts-settings"]["SERVICE_FORWARDED_ALLOW_IPS"] == network
    assert ServiceSettings(forwarded_allow_ips=network).forwarded_allow_ips == network
