"""The pure ASGI middleware on their own, with raw scopes where httpx would refuse to
send the input (a header value with a newline, a non-numeric Content-Length)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.types import Message, Receive, Scope, Send

from shared.app import UnhandledErrorMiddleware
from shared.errors import PayloadTooLarge, ServiceUnavailable
from shared.middleware import (
    BodySizeLimitMiddleware,
    RequestIdMiddleware,
    SecurityHeadersMiddleware,
    current_request_id,
    new_request_id,
)

EIGHT_HEX = re.compile(r"[0-9a-f]{8}")


async def call(
    app: Any, headers: list[tuple[bytes, bytes]], body_chunks: list[bytes] | None = None
) -> tuple[int, dict[str, str], bytes]:
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/x",
        "raw_path": b"/x",
        "query_string": b"",
        "headers": headers,
        "http_version": "1.1",
        "scheme": "http",
        "server": ("test", 80),
        "root_path": "",
    }
    chunks = list(body_chunks or [b""])
    sent: list[Message] = []

    async def receive() -> Message:
        if not chunks:
            return {"type": "http.disconnect"}
        chunk = chunks.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    response_headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], response_headers, body


async def echo_request_id(scope: Scope, receive: Receive, send: Send) -> None:
    await JSONResponse({"seen": current_request_id()})(scope, receive, send)


@pytest.mark.parametrize("value", [b"abc\n", b"abc\r\nX-Evil: 1", b"a" * 65, b"", b"a b"])
async def test_request_id_with_bad_characters_or_length_is_replaced(value):
    status, headers, body = await call(
        RequestIdMiddleware(echo_request_id), [(b"x-request-id", value)]
    )
    assert status == 200
    assert EIGHT_HEX.fullmatch(headers["x-request-id"])
    assert json.loads(body)["seen"] == headers["x-request-id"]


async def test_request_id_of_sixty_four_allowed_characters_is_kept():
    value = "A-z.0:9_" * 8
    _, headers, body = await call(
        RequestIdMiddleware(echo_request_id), [(b"x-request-id", value.encode())]
    )
    assert headers["x-request-id"] == value
    assert json.loads(body)["seen"] == value


async def test_request_id_is_cleared_after_the_request():
    await call(RequestIdMiddleware(echo_request_id), [(b"x-request-id", b"abcdef01")])
    assert current_request_id() is None


def test_new_request_ids_are_eight_hex_characters_and_differ():
    ids = {new_request_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(EIGHT_HEX.fullmatch(i) for i in ids)


async def read_body(scope: Scope, receive: Receive, send: Send) -> None:
    body = await Request(scope, receive).body()
    await PlainTextResponse(str(len(body)))(scope, receive, send)


async def test_non_numeric_content_length_is_still_counted_as_it_streams():
    app = BodySizeLimitMiddleware(read_body, max_body_size=10)
    with pytest.raises(PayloadTooLarge):
        await call(app, [(b"content-length", b"lots")], [b"x" * 6, b"x" * 6])


async def test_lying_small_content_length_is_still_counted_as_it_streams():
    app = BodySizeLimitMiddleware(read_body, max_body_size=10)
    with pytest.raises(PayloadTooLarge):
        await call(app, [(b"content-length", b"5")], [b"x" * 6, b"x" * 6])


async def test_body_exactly_at_the_limit_is_accepted():
    app = BodySizeLimitMiddleware(read_body, max_body_size=10)
    status, _, body = await call(app, [(b"content-length", b"10")], [b"x" * 10])
    assert (status, body) == (200, b"10")


async def test_declared_content_length_over_the_limit_is_answered_without_reading():
    reads: list[Message] = []

    async def never(scope: Scope, receive: Receive, send: Send) -> None:
        reads.append(await receive())

    status, headers, body = await call(
        BodySizeLimitMiddleware(never, max_body_size=10), [(b"content-length", b"11")]
    )
    assert status == 413
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["detail"][0] == "PayloadTooLarge"
    assert reads == []


async def test_security_headers_server_header_replaces_the_handlers():
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await PlainTextResponse("ok", headers={"server": "uvicorn"})(scope, receive, send)

    _, headers, _ = await call(SecurityHeadersMiddleware(app, server_header="srv-1"), [])
    assert headers["server"] == "srv-1"
    assert headers["x-frame-options"] == "SAMEORIGIN"


async def test_platform_error_raised_outside_the_router_renders_in_its_shape():
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise ServiceUnavailable("Token revocation list unavailable.")

    status, _, body = await call(UnhandledErrorMiddleware(app), [])
    assert status == 503
    assert json.loads(body) == {
        "detail": ["ServiceUnavailable", "Token revocation list unavailable."]
    }


async def test_unexpected_error_outside_the_router_is_a_generic_500():
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise KeyError("internal detail")

    status, headers, body = await call(UnhandledErrorMiddleware(app), [])
    assert status == 500
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {"detail": ["RuntimeError", "Internal server error."]}


async def test_error_after_the_response_started_is_re_raised():
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("stream broke")

    with pytest.raises(RuntimeError, match="stream broke"):
        await call(UnhandledErrorMiddleware(app), [])
