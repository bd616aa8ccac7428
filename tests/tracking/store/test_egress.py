"""What the server may connect to for a user's S3 store: the address rules, the proxy that
applies them where the connection is made, the endpoint shapes accepted, and the
credentials a store's requests carry (its own or none)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from ipaddress import ip_network

import pytest

from shared.errors import BadRequest
from tests.support.redis_server import free_port
from tracking.component.flavors import s3_endpoint
from tracking.store.base import MissingFile
from tracking.store.egress import AddressPolicy, EgressProxy
from tracking.store.s3 import S3ArtifactStore, S3Options, StoreFailed, s3_client

GENERIC = "The server could not complete the request to the artifact store."


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.3.2.1",
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "100.64.0.1",
        "169.254.169.254",
        "169.254.170.2",
        "169.254.1.1",
        "0.0.0.0",  # noqa: S104 (an address refused, not one bound)
        "224.0.0.1",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fe80::1%eth0",
        "fc00::1",
        "fd00:ec2::254",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "::ffff:10.1.2.3",
        "64:ff9b::a9fe:a9fe",
        "2002:7f00:1::1",
        "2001:0:4136:e378:8000:63bf:80ff:fffe",
    ],
)
def test_addresses_that_are_not_public_are_refused(address: str) -> None:
    assert AddressPolicy().refusal(address) is not None


@pytest.mark.parametrize("address", ["8.8.8.8", "52.216.8.1", "2600:1f18::1", "::ffff:8.8.8.8"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert AddressPolicy().refusal(address) is None


def test_the_operators_networks_are_allowed_but_metadata_only_when_named() -> None:
    policy = AddressPolicy([ip_network("127.0.0.0/8"), ip_network("169.254.0.0/16")])
    assert policy.refusal("127.0.0.1") is None
    assert policy.refusal("::ffff:127.0.0.1") is None
    assert policy.refusal("169.254.1.1") is None
    assert policy.refusal("169.254.169.254") is not None
    assert policy.refusal("10.0.0.1") is not None
    assert AddressPolicy([ip_network("169.254.169.254/32")]).refusal("169.254.169.254") is None


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9000/internal?",
        "http://host/x?a=b",
        "http://host/#frag",
        "http://user:pw@host",
        "http://host:99999",
        "http://host:port",
        "http://",
        "http://host/a b",
        "http:\\\\host",
        "ftp://host",
        "file:///etc/passwd",
    ],
)
def test_endpoints_other_than_scheme_host_port_path_are_refused(url: str) -> None:
    with pytest.raises(ValueError, match="Invalid URL for endpoint url"):
        s3_endpoint(url)


def test_plain_endpoints_are_kept_without_their_trailing_slash() -> None:
    assert s3_endpoint("https://s3.example.com:9000/base/") == "https://s3.example.com:9000/base"
    assert s3_endpoint("http://minio") == "http://minio"


@dataclass
class Listener:
    """A loopback HTTP server that answers 404 to everything and records what came."""

    port: int = 0
    connections: int = 0
    requests: list[str] = field(default_factory=list)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            writer.close()
            return
        self.requests.append(head.decode("latin-1"))
        writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        await writer.drain()
        writer.close()


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    found = Listener()
    server = await asyncio.start_server(found.serve, "127.0.0.1", 0)
    found.port = server.sockets[0].getsockname()[1]
    yield found
    server.close()
    await server.wait_closed()


async def _proxy(*allowed: str) -> EgressProxy:
    proxy = EgressProxy(AddressPolicy([ip_network(a) for a in allowed]), connect_timeout=2.0)
    await proxy.start()
    return proxy


def _store(
    proxy: EgressProxy, endpoint: str, secrets: dict[str, str] | None = None
) -> S3ArtifactStore:
    configuration = {"path": "s3://bucket", "client_kwargs": {"endpoint_url": endpoint}}
    options = S3Options(timedelta(seconds=2), timedelta(seconds=10), 0, proxy.url)
    return S3ArtifactStore("probe", "s3://bucket", s3_client(configuration, secrets or {}, options))


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::ffff:127.0.0.1]"])
async def test_a_loopback_endpoint_is_never_connected_to(listener: Listener, host: str) -> None:
    proxy = await _proxy()
    try:
        with pytest.raises(StoreFailed) as raised:
            await _store(proxy, f"http://{host}:{listener.port}").read_bytes("s3://bucket/k", 10)
    finally:
        await proxy.close()
    assert raised.value.status_code == 502
    assert raised.value.message == GENERIC
    assert listener.connections == 0


async def test_https_endpoints_are_checked_too(listener: Listener) -> None:
    proxy = await _proxy()
    try:
        with pytest.raises(StoreFailed) as raised:
            await _store(proxy, f"https://127.0.0.1:{listener.port}").read_bytes(
                "s3://bucket/k", 10
            )
    finally:
        await proxy.close()
    assert raised.value.message == GENERIC
    assert listener.connections == 0


async def test_open_closed_and_non_http_ports_fail_alike(listener: Listener) -> None:
    silent = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    not_http = silent.sockets[0].getsockname()[1]
    proxy = await _proxy("127.0.0.0/8")
    messages = []
    try:
        for port in (free_port(), not_http):
            with pytest.raises(StoreFailed) as raised:
                await _store(proxy, f"http://127.0.0.1:{port}").read_bytes("s3://bucket/k", 10)
            messages.append((raised.value.status_code, raised.value.message))
    finally:
        await proxy.close()
        silent.close()
    assert messages == [(502, GENERIC)] * 2


async def test_a_store_without_keys_sends_unsigned_requests_whatever_the_environment(
    listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIASERVERSOWNKEY000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "the-servers-own-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "the-servers-own-token")
    metadata = f"http://127.0.0.1:{listener.port}/credentials"
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", metadata)
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", f"http://127.0.0.1:{listener.port}")
    proxy = await _proxy("127.0.0.0/8")
    try:
        endpoint = f"http://127.0.0.1:{listener.port}"
        with pytest.raises(MissingFile):
            await _store(proxy, endpoint).read_bytes("s3://bucket/k", 10)
        with pytest.raises(MissingFile):
            await _store(
                proxy, endpoint, {"key": "AKIASTORESOWNKEY0000", "secret": "s"}
            ).read_bytes("s3://bucket/k", 10)
    finally:
        await proxy.close()
    unsigned, signed = listener.requests
    assert unsigned.startswith("GET /bucket/k HTTP/1.1")
    assert "authorization" not in unsigned.lower()
    assert "AKIASTORESOWNKEY0000" in signed
    for request in listener.requests:
        assert "AKIASERVERSOWNKEY000" not in request
        assert "the-servers-own-token" not in request
        assert "/credentials" not in request.split("\r\n")[0]


def test_an_endpoint_with_a_query_is_refused_at_use() -> None:
    configuration = {"path": "s3://b", "client_kwargs": {"endpoint_url": "http://h:1/x?"}}
    options = S3Options(timedelta(seconds=1), timedelta(seconds=1), 0, "http://127.0.0.1:9")
    with pytest.raises(BadRequest) as raised:
        s3_client(configuration, {}, options)
    assert raised.value.status_code == 400
