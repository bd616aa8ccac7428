"""A Kubernetes connector's API server is reached through the egress proxy: an internal
address is refused before any connection, unless the operator allowed its network."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from ipaddress import ip_network

import pytest

from tracking.service_connector.probe import ClusterAccess, ClusterProbe, ProbeFailed
from tracking.store.egress import AddressPolicy, EgressProxy


@pytest.fixture
async def listener() -> AsyncIterator[tuple[int, list[str]]]:
    """A TCP server on loopback that records each connection it accepts (and closes it)."""
    seen: list[str] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append("connection")
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], seen
    finally:
        server.close()
        await server.wait_closed()


async def probe_through(policy: AddressPolicy, access: ClusterAccess) -> None:
    proxy = EgressProxy(policy, connect_timeout=2.0)
    await proxy.start()
    try:
        await ClusterProbe(proxy.url, timedelta(seconds=2)).version(access)
    finally:
        await proxy.close()


async def test_a_loopback_api_server_is_never_connected_to(
    listener: tuple[int, list[str]],
) -> None:
    port, seen = listener
    access = ClusterAccess(server=f"https://127.0.0.1:{port}", token="t")
    with pytest.raises(ProbeFailed):
        await probe_through(AddressPolicy(), access)
    assert seen == []


async def test_an_allowed_network_is_reached(listener: tuple[int, list[str]]) -> None:
    port, seen = listener
    access = ClusterAccess(server=f"https://127.0.0.1:{port}", token="t")
    with pytest.raises(ProbeFailed):  # it closes the connection: no TLS, no cluster
        await probe_through(AddressPolicy([ip_network("127.0.0.1/32")]), access)
    assert seen == ["connection"]


async def test_a_metadata_address_is_refused() -> None:
    access = ClusterAccess(server="https://169.254.169.254", token="t")
    with pytest.raises(ProbeFailed, match="ProxyError"):
        await probe_through(AddressPolicy(), access)


async def test_a_plain_http_server_is_refused_before_any_request() -> None:
    with pytest.raises(ProbeFailed, match="not an https URL"):
        await ClusterProbe("http://127.0.0.1:9", timedelta(seconds=1)).version(
            ClusterAccess(server="http://k8s.example.com", token="t")
        )
