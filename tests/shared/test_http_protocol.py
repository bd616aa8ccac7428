"""The platform's HTTP protocol under uvicorn, on real sockets: direct routes are answered
whole, in one write, with uvicorn's pipelining, keep-alive, disconnects and shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from shared.http_protocol import (
    DIRECT_ROUTE,
    PROXY_HEADERS,
    DirectAnswer,
    HttpProtocol,
    resolve_proxy,
)
from tests.support.waiting import until

# ---------------------------------------------------------------------------------------------
# uvicorn with the protocol, on a real socket


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """The ASGI app behind the direct routes."""
    assert scope["type"] == "http"
    path = scope["path"]
    body = b"" if scope["method"] == "HEAD" else f"hello {path}".encode()
    headers = [(b"content-length", str(len(f"hello {path}")).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class Counting:
    """The real transport, counting the writes that reach it."""

    def __init__(self, transport: asyncio.Transport, writes: list[bytes]) -> None:
        self._transport = transport
        self._writes = writes

    def write(self, data: bytes) -> None:
        self._writes.append(data)
        self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


WRITES: list[bytes] = []
SHUTDOWNS: list[HttpProtocol] = []
"""The connections uvicorn has asked to finish (its ``shutdown()`` call on each)."""


class CountedProtocol(HttpProtocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(Counting(transport, WRITES))  # type: ignore[arg-type]

    def shutdown(self) -> None:
        SHUTDOWNS.append(self)
        super().shutdown()


@contextlib.asynccontextmanager
async def connection(
    port: int, source: str | None = None
) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    """A connection to the server, from the loopback address ``source`` if given."""
    local = (source, 0) if source is not None else None
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=local)
    try:
        yield reader, writer
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def _response(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    return head, await asyncio.wait_for(reader.readexactly(length), 5)


# ---------------------------------------------------------------------------------------------
# Direct routes: answered without the ASGI cycle, with uvicorn's connection handling


class Direct:
    """An app whose lifespan registers a direct route for the paths under ``/direct``."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.seen: list[Scope] = []
        self.clients: list[Any] = []  # each scope's client as the handler saw it
        self.bodies: list[bytes | None] = []

    def route(self, scope: Scope) -> Any:
        return self.handle if scope["path"].startswith("/direct") else None

    async def handle(self, scope: Scope, receive: Receive) -> DirectAnswer | None:
        self.seen.append(scope)
        self.clients.append(scope["client"])
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.bodies.append(None)
                return None
            chunks.append(message["body"])
            if not message["more_body"]:
                break
        body = b"".join(chunks)
        self.bodies.append(body)
        path = scope["path"]
        if path == "/direct/raise":
            raise RuntimeError("boom")
        if path == "/direct/none":
            return None
        if path == "/direct/wait":
            await self.release.wait()
        answer = f"direct {path} {len(body)}".encode()
        headers = [(b"content-length", str(len(answer)).encode()), (b"x-kind", b"direct")]
        return DirectAnswer(201, headers, answer)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            scope["state"][DIRECT_ROUTE] = self.route
            while True:
                message = await receive()
                kind = message["type"].removeprefix("lifespan.")
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        await app(scope, receive, send)


@pytest.fixture
async def direct_server(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[int, Direct, uvicorn.Server]]:
    """The protocol serving :class:`Direct`, believing X-Forwarded-For from 127.0.0.1 (or
    the addresses given as the fixture's parameter)."""
    trusted = getattr(request, "param", "127.0.0.1")
    direct = Direct()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(
        direct, host="127.0.0.1", port=port, http=CountedProtocol, log_config=None,
        access_log=False, proxy_headers=True, forwarded_allow_ips=trusted,
    )  # fmt: skip
    uvicorn_server = uvicorn.Server(config)
    task = asyncio.create_task(uvicorn_server.serve())
    await until(lambda: uvicorn_server.started or task.done(), "uvicorn started")
    if task.done():
        task.result()  # its start-up error
    WRITES.clear()
    SHUTDOWNS.clear()
    yield port, direct, uvicorn_server
    uvicorn_server.should_exit = True
    direct.release.set()
    await asyncio.wait_for(task, 10)


def _post(path: str, body: bytes = b"", extra: str = "") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode()
        + body
    )


async def test_a_direct_answer_is_one_write_with_the_date_and_keep_alive_goes_on(
    direct_server: tuple[int, Direct, uvicorn.Server],
) -> None:
    port, direct, _ = direct_server
    async with connection(port) as (reader, writer):
        for n in range(2):
            writer.write(_post(f"/direct/{n}", b"x" * n))
            head, body = await _response(reader)
            assert head.startswith(b"HTTP/1.1 201 Created\r\n")
            assert b"\r\ndate: " in head
            assert b"\r\nx-kind: direct\r\n" in head
            assert b"connection: close" not in head
            assert body == f"direct /direct/{n} {n}".encode()
    assert [write.rsplit(b"\r\n\r\n", 1)[1] for write in WRITES] == [
        b"direct /direct/0 0",
        b"direct /direct/1 1",
    ]
    # The scope is uvicorn's own: no ASGI app saw it, the proxy rewrite is left to the
    # handler (here nothing to rewrite: no X-Forwarded-For).
    scope = direct.seen[0]
    assert scope["method"] == "POST"
    assert scope["client"][0] == "127.0.0.1"
    resolve_proxy(scope)
    assert PROXY_HEADERS not in scope
    assert scope["client"][0] == "127.0.0.1"


async def test_direct_and_asgi_requests_pipelined_are_answered_in_order(
    direct_server: tuple[int, Direct, uvicorn.Server],
) -> None:
    port, _, _ = direct_server
    async with connection(port) as (reader, writer):
        writer.write(
            _post("/direct/a", b"12345")
            + b"GET /asgi HTTP/1.1\r\nHost: t\r\n\r\n"
            + _post("/direct/b", b"")
            + _post("/direct/c", b"abc", "Connection: close\r\n")
        )
        bodies = [(await _response(reader))[1] for _ in range(3)]
        rest = await asyncio.wait_for(reader.read(), 5)  # the server closes after the last
    assert bodies == [b"direct /direct/a 5", b"hello /asgi", b"direct /direct/b 0"]
    assert b"connection: close\r\n" in rest
    assert rest.endswith(b"\r\n\r\ndirect /direct/c 3")


async def test_a_direct_head_answer_has_no_body(
    direct_server: tuple[int, Direct, uvicorn.Server],
) -> None:
    port, _, _ = direct_server
    async with connection(port) as (reader, writer):
        writer.write(b"HEAD /direct/h HTTP/1.1\r\nHost: t\r\n\r\n")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        writer.write(_post("/direct/after"))
        _, body = await _response(reader)  # nothing was left over from the HEAD answer
    assert b"content-length: 18" in head  # "direct /direct/h 0", not sent
    assert body == b"direct /direct/after 0"


async def test_a_handler_that_fails_or_answers_nothing_gets_uvicorns_500(
    direct_server: tuple[int, Direct, uvicorn.Server], caplog: pytest.LogCaptureFixture
) -> None:
    port, _, _ = direct_server
    for path, logged in (
        ("/direct/raise", "Exception in direct handler"),
        ("/direct/none", "Direct handler returned without an answer."),
    ):
        async with connection(port) as (reader, writer):
            writer.write(_post(path, b"{}"))
            head, body = await _response(reader)
            assert await asyncio.wait_for(reader.read(), 5) == b""  # then it closes
        assert head.startswith(b"HTTP/1.1 500 ")
        assert b"connection: close" in head
        assert body == b"Internal Server Error"
        assert logged in caplog.text


async def test_a_client_gone_mid_body_gets_nothing_and_the_handler_sees_it(
    direct_server: tuple[int, Direct, uvicorn.Server],
) -> None:
    port, direct, _ = direct_server
    async with connection(port) as (_, writer):
        writer.write(_post("/direct/partial", b"0123456789")[:-4])
        await writer.drain()
        await until(lambda: direct.seen, "the handler got the request")
    await until(lambda: direct.bodies, "the handler saw the body end")
    assert direct.bodies == [None]
    assert WRITES == []


async def test_shutdown_waits_for_a_direct_answer_which_closes_the_connection(
    direct_server: tuple[int, Direct, uvicorn.Server],
) -> None:
    port, direct, uvicorn_server = direct_server
    async with connection(port) as (reader, writer):
        writer.write(_post("/direct/wait"))
        await until(lambda: direct.seen, "the handler got the request")
        uvicorn_server.should_exit = True  # uvicorn asks connections to finish
        await until(lambda: SHUTDOWNS, "uvicorn asked the connection to finish")
        direct.release.set()
        head, body = await _response(reader)
        assert await asyncio.wait_for(reader.read(), 5) == b""
    assert b"connection: close" in head
    assert body == b"direct /direct/wait 0"


async def test_the_forwarded_client_is_resolved_when_asked(
    direct_server: tuple[int, Direct, uvicorn.Server],
) -> None:
    port, direct, _ = direct_server
    async with connection(port) as (reader, writer):
        forwarded = "X-Forwarded-For: 203.0.113.7\r\nX-Forwarded-Proto: https\r\n"
        writer.write(_post("/direct/p", b"", forwarded))
        await _response(reader)
    assert direct.clients[0][0] == "127.0.0.1"  # as uvicorn made it
    scope = direct.seen[0]
    resolve_proxy(scope)
    assert (scope["client"][0], scope["scheme"]) == ("203.0.113.7", "https")
    resolve_proxy(scope)  # once only
    assert scope["client"][0] == "203.0.113.7"


@pytest.mark.parametrize("direct_server", ["127.0.0.2"], indirect=True)
async def test_the_forwarded_client_is_believed_only_from_a_trusted_peer(
    direct_server: tuple[int, Direct, uvicorn.Server],
) -> None:
    """Another local process (127.0.0.1) names no client; the gateway (127.0.0.2) does."""
    port, direct, _ = direct_server
    forwarded = "X-Forwarded-For: 203.0.113.7\r\nX-Forwarded-Proto: https\r\n"
    for source in ("127.0.0.1", "127.0.0.2"):
        async with connection(port, source) as (reader, writer):
            writer.write(_post("/direct/p", b"", forwarded))
            await _response(reader)
    local, gateway = direct.seen
    for scope in (local, gateway):
        resolve_proxy(scope)
    assert (local["client"][0], local["scheme"]) == ("127.0.0.1", "http")
    assert (gateway["client"][0], gateway["scheme"]) == ("203.0.113.7", "https")
