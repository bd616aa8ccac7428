"""Where the server may connect on behalf of a user's S3 artifact store, checked where the
connection is made.

A store's ``endpoint_url`` is the caller's, so the server must not reach its own or its
network's services through it (loopback, private, link-local, metadata addresses …).
Checking the URL's host before handing it to the S3 client would not be enough: the
client resolves the name again when it connects, and a name can answer a public address
to the check and ``127.0.0.1`` to the connection (DNS rebinding). So every S3 client is
given :class:`EgressProxy` as its HTTP proxy: the proxy resolves the host itself, checks
every address against :class:`AddressPolicy`, and connects to the address it checked.
HTTPS goes through as a ``CONNECT`` tunnel (TLS stays end to end); plain HTTP requests
are forwarded one per connection (``Connection: close``), so a connection never carries
a request for a host that was not checked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Sequence
from ipaddress import (
    IPv4Address,
    IPv4Network,
    IPv6Address,
    IPv6Network,
    ip_address,
)
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

# Instance metadata and credential endpoints of the clouds (AWS IMDS and ECS, GCP, Azure,
# Alibaba, Oracle): refused even inside an allowlisted network unless listed on their own.
METADATA = frozenset(
    ip_address(a)
    for a in (
        "169.254.169.254",
        "169.254.170.2",
        "169.254.169.123",
        "100.100.100.200",
        "192.0.0.192",
        "fd00:ec2::254",
    )
)
NAT64 = IPv6Network("64:ff9b::/96")
HEAD_LIMIT = 64 * 1024
PIPE_CHUNK = 64 * 1024

Address = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network


def embedded_ipv4(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, Teredo client, NAT64), if any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in NAT64:
        return IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _not_public(address: Address) -> str | None:
    if address in METADATA:
        return "a cloud metadata address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_reserved:
        return "a reserved address"
    if address.is_private or not address.is_global:
        return "a private address"
    return None


class AddressPolicy:
    """Which addresses the server may connect to for a user's store: public ones, and
    the operator's ``allowed`` networks (a metadata address only when listed alone)."""

    def __init__(self, allowed: Sequence[Network] = ()) -> None:
        self.allowed = tuple(allowed)

    def _allowlisted(self, address: Address) -> bool:
        if address in METADATA:
            return any(n.num_addresses == 1 and address in n for n in self.allowed)
        return any(address.version == n.version and address in n for n in self.allowed)

    def refusal(self, address: str) -> str | None:
        """Why the server may not connect to ``address`` (``None``: it may)."""
        ip: Address = ip_address(address.split("%", 1)[0])  # an IPv6 zone is not part of it
        if isinstance(ip, IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        candidates: list[Address] = [ip]
        if isinstance(ip, IPv6Address) and (inner := embedded_ipv4(ip)) is not None:
            candidates.append(inner)
        for candidate in candidates:
            if self._allowlisted(candidate):
                continue
            reason = _not_public(candidate)
            if reason is not None:
                return f"{candidate} is {reason}"
        return None


class Refused(Exception):
    """The destination is not one the server may reach (the reason is for the log)."""


def _host_port(authority: str, default_port: int) -> tuple[str, int]:
    try:
        parts = urlsplit(f"//{authority}")
        host, port = parts.hostname, parts.port or default_port
    except ValueError as exc:
        raise Refused(f"bad authority {authority[:200]!r}") from exc
    if not host:
        raise Refused(f"no host in {authority[:200]!r}")
    return host, port


class EgressProxy:
    """An HTTP proxy on loopback, one per process, through which S3 clients connect: it
    connects only to addresses :class:`AddressPolicy` allows, after resolving names."""

    def __init__(self, policy: AddressPolicy, connect_timeout: float) -> None:
        self.policy = policy
        self.connect_timeout = connect_timeout
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the egress proxy is not started")
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=HEAD_LIMIT)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None

    async def open(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to ``host:port`` at an address the policy allows (every address
        the name resolves to must be allowed); :class:`Refused` or ``OSError`` otherwise."""
        loop = asyncio.get_running_loop()
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), self.connect_timeout
        )
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        for address in addresses:
            reason = self.policy.refusal(address)
            if reason is not None:
                raise Refused(f"{host} resolves to {reason}")
        failure: OSError = OSError(f"{host} resolves to no address")
        for address in addresses:
            try:
                return await asyncio.wait_for(
                    asyncio.open_connection(address, port, limit=HEAD_LIMIT),
                    self.connect_timeout,
                )
            except (OSError, TimeoutError) as exc:
                failure = exc if isinstance(exc, OSError) else OSError(f"{address}: timed out")
        raise failure

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._relay(reader, writer)
        except asyncio.CancelledError:
            pass
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.connect_timeout)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            return
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = [*lines[0].split(" ", 2), "", ""][:3]
        tunnel = method == "CONNECT"
        try:
            if tunnel:
                host, port = _host_port(target, 443)
            else:
                parts = urlsplit(target)
                if parts.scheme != "http":
                    raise Refused(f"not a proxy request: {lines[0][:200]!r}")
                host, port = _host_port(parts.netloc, 80)
            upstream_reader, upstream = await self.open(host, port)
        except (Refused, ValueError) as exc:  # ValueError: a target urlsplit cannot read
            log.warning("artifact store connection refused: %s", exc)
            writer.write(
                b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
            return
        except (OSError, TimeoutError) as exc:
            log.warning("artifact store %s:%s not reached: %s", host, port, exc or type(exc))
            writer.write(
                b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
            return
        try:
            if tunnel:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await asyncio.gather(_pipe(reader, upstream), _pipe(upstream_reader, writer))
                return
            path = parts.path or "/"
            if parts.query:
                path = f"{path}?{parts.query}"
            upstream.write(_closing_head(f"{method} {path} {version}", lines[1:]))
            body = asyncio.create_task(_pipe(reader, upstream))
            try:
                # The answer's head is rewritten too, so the client does not keep the
                # connection for another request, which this proxy would not look at.
                answer = await _head(upstream_reader)
                if answer is not None:
                    status, *headers = answer
                    writer.write(_closing_head(status, headers))
                    await _pipe(upstream_reader, writer)
            finally:
                body.cancel()
                await asyncio.gather(body, return_exceptions=True)
        finally:
            upstream.close()


async def _head(reader: asyncio.StreamReader) -> list[str] | None:
    """An HTTP message's start line and header lines (``None`` when it never came)."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
        return None
    return [line for line in head.decode("latin-1").split("\r\n") if line]


def _closing_head(start: str, headers: Sequence[str]) -> bytes:
    hop_by_hop = ("connection:", "keep-alive:", "proxy-")
    kept = [h for h in headers if h and not h.lower().startswith(hop_by_hop)]
    return "\r\n".join([start, *kept, "connection: close", "", ""]).encode("latin-1")


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(PIPE_CHUNK):
            sink.write(data)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()
    except (OSError, RuntimeError):
        sink.close()
