"""The shared middleware on its own, with raw scopes where httpx would refuse to send the
input (a header value with a newline, a non-numeric Content-Length)."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.types import Message, Receive, Scope, Send

from shared.errors import ServiceUnavailable, Unauthorized
from shared.http_protocol import DirectAnswer, send_answer
from shared.idempotency import read_body as read_whole_body
from shared.logging import MASK, SECRET_KEY_PATTERN
from shared.middleware import (
    SECURITY_HEADERS,
    ServiceMiddleware,
    _redacted_query,
    current_request_id,
    header_dict,
    new_request_id,
)
from shared.responses import error_response, error_style_var
from tests.shared.test_app import json_log, log_records

EIGHT_HEX = re.compile(r"[0-9a-f]{8}")


def stack(app: Any, max_body_size: int = 10) -> ServiceMiddleware:
    return ServiceMiddleware(app, server_header="srv-1", max_body_size=max_body_size)


class Exchange:
    """One request through an ASGI app over raw messages: what it read and sent."""

    def __init__(
        self,
        headers: list[tuple[bytes, bytes]],
        body_chunks: list[bytes] | None = None,
        *,
        path: str = "/x",
        http_version: str = "1.1",
    ) -> None:
        self.scope = {
            "type": "http",
            "method": "POST",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "headers": headers,
            "http_version": http_version,
            "scheme": "http",
            "server": ("test", 80),
            "client": ("10.0.0.1", 1234),
            "root_path": "",
        }
        self.chunks = list(body_chunks or [b""])
        self.reads = 0
        self.sent: list[Message] = []

    async def receive(self) -> Message:
        self.reads += 1
        if not self.chunks:
            return {"type": "http.disconnect"}
        chunk = self.chunks.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(self.chunks)}

    async def send(self, message: Message) -> None:
        self.sent.append(message)

    async def run(self, app: Any) -> Exchange:
        await app(self.scope, self.receive, self.send)
        return self

    @property
    def status(self) -> int:
        return int(self.start["status"])

    @property
    def start(self) -> Message:
        return next(m for m in self.sent if m["type"] == "http.response.start")

    @property
    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        return list(self.start["headers"])

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent if m["type"] == "http.response.body")


async def call(
    app: Any, headers: list[tuple[bytes, bytes]], body_chunks: list[bytes] | None = None
) -> tuple[int, dict[str, str], bytes]:
    answer = await Exchange(headers, body_chunks).run(app)
    response_headers = {k.decode(): v.decode() for k, v in answer.raw_headers}
    return answer.status, response_headers, answer.body


async def echo_request_id(scope: Scope, receive: Receive, send: Send) -> None:
    await JSONResponse({"seen": current_request_id()})(scope, receive, send)


@pytest.mark.parametrize("value", [b"abc\n", b"abc\r\nX-Evil: 1", b"a" * 65, b"", b"a b"])
async def test_request_id_with_bad_characters_or_length_is_replaced(value):
    status, headers, body = await call(stack(echo_request_id), [(b"x-request-id", value)])
    assert status == 200
    assert EIGHT_HEX.fullmatch(headers["x-request-id"])
    assert json.loads(body)["seen"] == headers["x-request-id"]


async def test_request_id_of_sixty_four_allowed_characters_is_kept():
    value = "A-z.0:9_" * 8
    _, headers, body = await call(stack(echo_request_id), [(b"x-request-id", value.encode())])
    assert headers["x-request-id"] == value
    assert json.loads(body)["seen"] == value


async def test_request_id_is_cleared_after_the_request():
    await call(stack(echo_request_id), [(b"x-request-id", b"abcdef01")])
    assert current_request_id() is None


def test_new_request_ids_are_eight_hex_characters_and_differ():
    ids = {new_request_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(EIGHT_HEX.fullmatch(i) for i in ids)


async def read_body(scope: Scope, receive: Receive, send: Send) -> None:
    body = await Request(scope, receive).body()
    await PlainTextResponse(str(len(body)))(scope, receive, send)


def assert_payload_too_large(status: int, body: bytes) -> None:
    assert status == 413
    assert json.loads(body) == {
        "detail": ["PayloadTooLarge", "Request body exceeds the limit of 10 bytes."]
    }


async def test_non_numeric_content_length_is_still_counted_as_it_streams():
    status, _, body = await call(
        stack(read_body), [(b"content-length", b"lots")], [b"x" * 6, b"x" * 6]
    )
    assert_payload_too_large(status, body)


async def test_lying_small_content_length_is_still_counted_as_it_streams():
    status, _, body = await call(
        stack(read_body), [(b"content-length", b"5")], [b"x" * 6, b"x" * 6]
    )
    assert_payload_too_large(status, body)


async def test_body_exactly_at_the_limit_is_accepted():
    app = stack(read_body)
    status, _, body = await call(app, [(b"content-length", b"10")], [b"x" * 10])
    assert (status, body) == (200, b"10")


async def test_declared_content_length_over_the_limit_is_answered_without_reading():
    reads: list[Message] = []

    async def never(scope: Scope, receive: Receive, send: Send) -> None:
        reads.append(await receive())

    status, headers, body = await call(stack(never), [(b"content-length", b"11")])
    assert status == 413
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["detail"][0] == "PayloadTooLarge"
    assert reads == []


async def test_security_headers_server_header_replaces_the_handlers():
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await PlainTextResponse("ok", headers={"server": "uvicorn"})(scope, receive, send)

    _, headers, _ = await call(stack(app), [])
    assert headers["server"] == "srv-1"
    assert headers["x-frame-options"] == "SAMEORIGIN"


async def test_platform_error_raised_outside_the_router_renders_in_its_shape():
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise ServiceUnavailable("Token revocation list unavailable.")

    status, _, body = await call(stack(app), [])
    assert status == 503
    assert json.loads(body) == {
        "detail": ["ServiceUnavailable", "Token revocation list unavailable."]
    }


async def test_unexpected_error_outside_the_router_is_a_generic_500():
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise KeyError("internal detail")

    status, headers, body = await call(stack(app), [])
    assert status == 500
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {"detail": ["RuntimeError", "Internal server error."]}


async def test_error_after_the_response_started_is_re_raised():
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("stream broke")

    with pytest.raises(RuntimeError, match="stream broke"):
        await call(stack(app), [])


SECURITY = [(name.encode(), value.encode()) for name, value in SECURITY_HEADERS]
SERVER = (b"server", b"srv-1")
REQUEST_ID = [(b"x-request-id", b"abcdef01")]


async def test_an_error_answer_keeps_its_headers_then_gets_security_headers_and_server():
    def error() -> Unauthorized:
        return Unauthorized("Bad.", headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise error()

    answer = await Exchange(REQUEST_ID).run(stack(app))
    assert answer.status == 401
    own = error_response(error(), "abcdef01").raw_headers
    assert answer.raw_headers == [*own, *SECURITY, SERVER]


async def test_the_generic_500_gets_security_headers_server_then_the_request_id():
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise KeyError("internal detail")

    answer = await Exchange(REQUEST_ID).run(stack(app))
    assert answer.raw_headers == [
        (b"content-length", b"54"),
        (b"content-type", b"application/json"),
        *SECURITY,
        SERVER,
        (b"x-request-id", b"abcdef01"),
    ]


async def test_a_handlers_own_headers_and_request_id_win_once():
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        headers = {"X-Request-ID": "mine", "Cache-Control": "max-age=60", "Server": "uvicorn"}
        await PlainTextResponse("ok", headers=headers)(scope, receive, send)

    answer = await Exchange(REQUEST_ID).run(stack(app))
    names = [name for name, _ in answer.raw_headers]
    assert len(names) == len(set(names))
    headers = dict(answer.raw_headers)
    assert headers[b"x-request-id"] == b"mine"
    assert headers[b"cache-control"] == b"max-age=60"
    assert answer.raw_headers[-1] == SERVER


async def test_health_gets_a_request_id_but_no_security_headers_or_access_log_line():
    with json_log("platform.access") as access:
        answer = await Exchange(REQUEST_ID, path="/health").run(stack(echo_request_id))
    assert [name for name, _ in answer.raw_headers] == [
        b"content-length",
        b"content-type",
        b"x-request-id",
    ]
    assert access.getvalue() == ""


async def test_an_error_after_the_answer_started_is_logged_with_the_started_status():
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("stream broke")

    with json_log("platform.access") as access, json_log("shared.app") as errors:
        exchange = Exchange(REQUEST_ID)
        with pytest.raises(RuntimeError, match="stream broke"):
            await exchange.run(stack(app))
    assert [m["type"] for m in exchange.sent] == ["http.response.start"]
    [line] = log_records(access)
    assert (line["status"], line["request_id"]) == (200, "abcdef01")
    [error] = log_records(errors)
    assert (error["msg"], error["request_id"]) == ("unhandled error", "abcdef01")
    assert current_request_id() is None


async def test_a_streamed_body_is_refused_as_it_crosses_the_limit_and_logged_413():
    exchange = Exchange([(b"transfer-encoding", b"chunked")], [b"x" * 6] * 5)
    with json_log("platform.access") as access:
        await exchange.run(stack(read_body))
    assert_payload_too_large(exchange.status, exchange.body)
    assert exchange.reads == 2
    [line] = log_records(access)
    assert line["status"] == 413
    assert line["request_id"] == dict(exchange.raw_headers)[b"x-request-id"].decode()


async def test_the_access_log_line_carries_the_request_id_it_answered_with():
    with json_log("platform.access") as access:
        answer = await Exchange([]).run(stack(echo_request_id))
    request_id = dict(answer.raw_headers)[b"x-request-id"].decode()
    assert EIGHT_HEX.fullmatch(request_id)
    [line] = log_records(access)
    assert line["request_id"] == request_id
    assert (line["msg"], line["client"]) == ("POST /x 200", "10.0.0.1")


@pytest.mark.parametrize(
    ("headers", "http_version", "counted"),
    [
        ([], "1.1", False),
        ([(b"content-length", b"0")], "1.1", False),
        ([(b"content-length", b"5")], "1.1", True),
        ([(b"content-length", b"lots")], "1.1", True),
        ([(b"transfer-encoding", b"chunked")], "1.1", True),
        ([], "2", True),
    ],
)
async def test_only_a_request_that_may_carry_a_body_has_it_counted(
    headers: list[tuple[bytes, bytes]], http_version: str, counted: bool
):
    handed: list[Receive] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        handed.append(receive)
        await PlainTextResponse("ok")(scope, receive, send)

    exchange = Exchange(headers, http_version=http_version)
    await exchange.run(stack(app))
    assert (handed[0] != exchange.receive) == counted


async def test_errors_raised_outside_the_router_render_in_the_services_style():
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise ServiceUnavailable("Token revocation list unavailable.")

    middleware = ServiceMiddleware(
        app, server_header="srv-1", max_body_size=10, error_style="message"
    )
    answer = await Exchange(REQUEST_ID).run(middleware)
    assert answer.status == 503
    assert json.loads(answer.body) == {"detail": "Token revocation list unavailable."}
    assert error_style_var.get() == "platform"


async def test_other_scopes_get_the_error_style_only():
    seen: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(error_style_var.get())

    middleware = ServiceMiddleware(
        app, server_header="srv-1", max_body_size=10, error_style="message"
    )
    await middleware({"type": "lifespan"}, Exchange([]).receive, Exchange([]).send)
    assert seen == ["message"]
    assert error_style_var.get() == "platform"


def urlencoded(query_string: bytes) -> str:
    """The access log's query as it was first written: parsed, masked, encoded again."""
    if not query_string:
        return ""
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    masked = [(k, MASK if SECRET_KEY_PATTERN.search(k) else v) for k, v in pairs]
    return "?" + urlencode(masked, safe="*")


query_fields = st.builds(
    "{}={}".format,
    st.sampled_from(["token", "page", "api_key", "Signature", "a", "", "x y", "na%6De"]),
    st.text(alphabet="az09_.-~*=%+:/?", max_size=8),
)
query_strings = st.one_of(
    st.lists(query_fields, max_size=5).map("&".join),
    st.text(alphabet="az09_.-~*=&%+:/ ;#\xe9", max_size=40),
).map(lambda text: text.encode("latin-1"))


@given(query_strings)
@example(b"project=e48baacb-c28b-4b8f-9eeb-19a08e781cb9&size=50&sort_by=created")
@example(b"a&&b=&=c&token=x=y")
def test_the_masked_query_is_written_as_urlencode_writes_it(query_string: bytes):
    assert _redacted_query(query_string) == urlencoded(query_string)


# ---------------------------------------------------------------------------------------------
# ServiceMiddleware.answer: the same, around a handler that returns its whole answer


def directly(handler: Any, max_body_size: int = 10) -> Any:
    """An ASGI app serving ``handler`` through :meth:`ServiceMiddleware.answer`."""
    middleware = stack(None, max_body_size)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        answer = await middleware.answer(scope, receive, handler)
        if answer is not None:
            await send_answer(answer, send)

    return app


def as_asgi(handler: Any) -> Any:
    """``handler`` as a plain ASGI app behind the ASGI middleware (what to compare with)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        answer = await handler(scope, receive, header_dict(scope["headers"]))
        if answer is not None:
            await send_answer(answer, send)

    return stack(app)


async def both(handler: Any, headers: list[tuple[bytes, bytes]], chunks: Any = None) -> Exchange:
    headers = [*headers, (b"x-request-id", b"abcdef01")]  # the first one counts
    direct = await Exchange(headers, chunks).run(directly(handler))
    routed = await Exchange(headers, chunks).run(as_asgi(handler))
    assert (direct.status, direct.raw_headers, direct.body) == (
        routed.status,
        routed.raw_headers,
        routed.body,
    )
    assert direct.reads == routed.reads
    return direct


async def echo(scope: Scope, receive: Receive, headers: dict[str, str]) -> DirectAnswer | None:
    body = await read_whole_body(receive)
    if body is None:
        return None
    text = json.dumps({"headers": headers, "body": body.decode(), "id": current_request_id()})
    return DirectAnswer(200, [(b"content-length", str(len(text)).encode())], text.encode())


async def test_answer_keeps_or_makes_the_request_id_and_gives_the_first_of_repeated_headers():
    headers = [(b"x-request-id", b"abcdef01"), (b"x-a", b"1"), (b"x-a", b"2")]
    answer = await both(echo, [*headers, (b"content-length", b"2")], [b"hi"])
    assert answer.status == 200
    seen = json.loads(answer.body)
    assert seen["headers"]["x-a"] == "1"
    assert (seen["body"], seen["id"]) == ("hi", "abcdef01")
    assert answer.raw_headers[-1] == (b"x-request-id", b"abcdef01")
    assert [*SECURITY, SERVER] == answer.raw_headers[1:-1]
    made = await Exchange([(b"x-request-id", b"bad id!")]).run(directly(echo))
    assert EIGHT_HEX.fullmatch(dict(made.raw_headers)[b"x-request-id"].decode())


async def test_answer_refuses_bodies_over_the_limit_declared_or_streamed():
    declared = await both(echo, [(b"content-length", b"11")], [b"x" * 11])
    assert (declared.status, declared.reads) == (413, 0)
    streamed = await both(echo, [(b"transfer-encoding", b"chunked")], [b"x" * 6, b"y" * 6])
    assert streamed.status == 413
    assert json.loads(streamed.body)["detail"][0] == "PayloadTooLarge"


async def test_answer_renders_platform_errors_and_hides_others_as_a_logged_500(
    caplog: pytest.LogCaptureFixture,
):
    async def refuses(scope: Scope, receive: Receive, headers: dict[str, str]) -> DirectAnswer:
        raise ServiceUnavailable("later", headers={"Retry-After": "5"})

    unavailable = await both(refuses, [(b"x-request-id", b"abcdef01")])
    assert unavailable.status == 503
    assert dict(unavailable.raw_headers)[b"retry-after"] == b"5"

    async def breaks(scope: Scope, receive: Receive, headers: dict[str, str]) -> DirectAnswer:
        raise KeyError("internal detail")

    broken = await both(breaks, [(b"x-request-id", b"abcdef01")])
    assert broken.status == 500
    assert b"internal detail" not in broken.body
    assert caplog.text.count("unhandled error") == 2


async def test_answer_sends_nothing_when_the_client_went_away_and_logs_it_as_500():
    with json_log("platform.access") as lines:
        exchange = Exchange([(b"content-length", b"5")])
        exchange.chunks = []  # the client is gone before its body
        gone = await exchange.run(directly(echo))
        records = log_records(lines)
    assert gone.sent == []
    assert [record["status"] for record in records] == [500]
