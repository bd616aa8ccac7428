"""Structured logs that never print secrets: ``redact``, the formatters, the access log."""

from __future__ import annotations

import io
import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from shared.logging import (
    _SECRET_VALUE_PATTERNS,
    MASK,
    PRE_REDACTED,
    BatchingStreamHandler,
    JSONFormatter,
    TextFormatter,
    configure_logging,
    iso_timestamp,
    mask_every_pattern,
    redact,
    redact_text,
    request_id_var,
)
from shared.middleware import ServiceMiddleware
from tests.support.waiting import wait_for

JWT = (
    "eyJhbGciOiJFZERTQSIsImtpZCI6ImsxIn0"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwiZXhwIjoxNzAwMDAwMDAwfQ"
    ".c2lnbmF0dXJlLWJ5dGVzLWhlcmU"
)


def record(msg: str, *args: object, exc: bool = False, **extra: object) -> logging.LogRecord:
    exc_info = sys.exc_info() if exc else None
    result = logging.LogRecord("test", logging.INFO, __file__, 1, msg, args, exc_info)
    result.__dict__.update(extra)
    return result


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "new_password",
        "client_secret",
        "access_token",
        "api_key",
        "Authorization",
        "cookie",
        "device_code",
        "user_code",
    ],
)
def test_redact_masks_values_under_secret_keys(key):
    assert redact({key: "s3cret", "name": "alice"}) == {key: MASK, "name": "alice"}


def test_redact_walks_nested_dicts_and_lists():
    value = {"users": [{"name": "a", "password": "p"}], "meta": {"token": "t"}}
    assert redact(value) == {"users": [{"name": "a", "password": MASK}], "meta": {"token": MASK}}


def test_redact_keeps_empty_secret_values_visible():
    assert redact({"password": None, "token": ""}) == {"password": None, "token": ""}


def test_redact_text_masks_jwt_looking_strings():
    assert redact_text(f"cookie value {JWT} seen") == f"cookie value {MASK} seen"


def test_redact_text_masks_bearer_credentials():
    assert redact_text("Authorization: Bearer abc.def-ghi") == f"Authorization: Bearer {MASK}"
    assert redact_text("bearer xyz, next") == f"bearer {MASK}, next"


def test_redact_text_masks_api_keys():
    masked = redact_text("key ZENKEY_eyJpZCI6IjEyMyIsImtleSI6ImFiYyJ9 used")
    assert "eyJpZCI6" not in masked
    assert masked.endswith(f"{MASK} used")


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("password=hunter2&user=a", "hunter2"),
        ("url /data?token=dl-123 done", "dl-123"),
        ("client_secret=abc def", "abc"),
        ("device code=ABCD-EFGH", "ABCD-EFGH"),
    ],
)
def test_redact_text_masks_key_value_pairs(text, secret):
    masked = redact_text(text)
    assert secret not in masked
    assert MASK in masked


def test_redact_text_masks_quoted_secret_keys_of_a_dict_in_a_message():
    masked = redact_text("""body {'username': 'a', 'password': 'hunter2'} {"api_token": "t0k"}""")
    assert "hunter2" not in masked
    assert "t0k" not in masked
    assert "'username': 'a'" in masked


def test_redact_masks_numbers_and_booleans_under_secret_keys():
    assert redact({"code": 123456, "pin_code": False, "count": 3}) == {
        "code": MASK,
        "pin_code": MASK,
        "count": 3,
    }


texts_with_secrets = st.one_of(
    st.text(),
    *(st.from_regex(pattern) for pattern in _SECRET_VALUE_PATTERNS),
)


@given(texts_with_secrets)
@example("127.0.0.1")
@example(f"cookie {JWT}")
def test_redact_text_masks_what_every_pattern_would(text: str):
    # What redact_text wrote before it first looked for a character the patterns need.
    assert redact_text(text) == mask_every_pattern(text)


def test_redact_text_leaves_ordinary_text_alone():
    text = "GET /api/v1/artifacts?page=2 200 in 3.1 ms"
    assert redact_text(text) == text


def test_json_formatter_writes_one_json_object_per_line():
    line = JSONFormatter().format(record("line one\nline two"))
    assert "\n" not in line
    payload = json.loads(line)
    assert payload["msg"] == "line one\nline two"
    assert payload["level"] == "info"
    assert payload["logger"] == "test"
    assert payload["ts"].endswith("+00:00")


def test_json_formatter_masks_secrets_in_message_and_extras():
    payload = json.loads(
        JSONFormatter().format(
            record("login with %s", f"Bearer {JWT}", client_secret="s", user="alice")
        )
    )
    assert JWT not in json.dumps(payload)
    assert payload["client_secret"] == MASK
    assert payload["user"] == "alice"


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
@example(1700000000.9999995)
@example(1700000000.0004995)
@example(1700000000.9994999)
def test_json_timestamps_are_what_datetime_writes(created: float):
    expected = datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")
    assert iso_timestamp(created) == expected


@pytest.mark.parametrize("formatter", [JSONFormatter(), TextFormatter()])
def test_records_with_the_same_fields_are_each_masked(formatter: logging.Formatter):
    first = formatter.format(record("a", user="alice", token="t-one"))
    second = formatter.format(record("b", user="bob", token="t-two"))
    other = formatter.format(record("c", token="t-three", user="carol", extra_field=1))
    assert "t-one" not in first
    assert "t-two" not in second
    assert "t-three" not in other
    assert "bob" in second
    # Extras are written in the order they were set.
    assert other.index("token") < other.index("carol") < other.index("extra_field")


def test_json_formatter_adds_the_current_request_id():
    token = request_id_var.set("feed1234")
    try:
        payload = json.loads(JSONFormatter().format(record("hello")))
    finally:
        request_id_var.reset(token)
    assert payload["request_id"] == "feed1234"


def test_json_formatter_masks_secrets_in_tracebacks():
    try:
        raise ValueError(f"bad token={JWT}")
    except ValueError:
        line = JSONFormatter().format(record("failed", exc=True))
    payload = json.loads(line)
    assert "ValueError" in payload["exc"]
    assert JWT not in line


def test_text_formatter_masks_secrets_too():
    line = TextFormatter().format(record("got %s", "password=hunter2", api_key="k"))
    assert "hunter2" not in line
    assert "'api_key': '***'" in line


async def ok(scope: Scope, receive: Receive, send: Send) -> None:
    await PlainTextResponse("ok")(scope, receive, send)


def middleware(app: Any) -> ServiceMiddleware:
    return ServiceMiddleware(app, server_header="srv-1", max_body_size=1024)


async def test_access_log_line_masks_secret_query_values():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JSONFormatter())
    logger = logging.getLogger("platform.access")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    app = middleware(ok)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test"
        ) as client:
            await client.get(
                "/api/v1/artifact_versions/1/data?token=dl-secret&page=2&api_key=k3y",
                headers={"X-Request-ID": "0123abcd"},
            )
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    [line] = stream.getvalue().splitlines()
    assert "dl-secret" not in line
    assert "k3y" not in line
    payload = json.loads(line)
    assert payload["msg"] == (
        "GET /api/v1/artifact_versions/1/data?token=***&page=2&api_key=*** 200"
    )
    assert payload["request_id"] == "0123abcd"
    assert payload["status"] == 200
    assert isinstance(payload["duration_ms"], float)


async def test_access_log_skips_health():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("platform.access")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=middleware(ok)), base_url="http://test"
        ) as client:
            await client.get("/health")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    assert stream.getvalue() == ""


@pytest.mark.parametrize("formatter", [JSONFormatter(), TextFormatter()])
def test_a_pre_redacted_message_skips_the_text_patterns_and_others_do_not(
    formatter: logging.Formatter,
):
    masked_already = record("GET /a/eyJx.eyJy.z?token=*** 200", **{PRE_REDACTED: True})
    plain = record(f"token {JWT}")
    assert "eyJx.eyJy.z" in formatter.format(masked_already)
    assert PRE_REDACTED not in formatter.format(masked_already)
    assert JWT not in formatter.format(plain)


# BatchingStreamHandler: routine lines in batches, warnings at once.


class CountingStream(io.StringIO):
    """A stream that counts its writes."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def leveled(msg: str, level: int = logging.INFO) -> logging.LogRecord:
    made = record(msg)
    made.levelno = level
    made.levelname = logging.getLevelName(level)
    return made


def batching(stream: io.StringIO, **options: Any) -> BatchingStreamHandler:
    handler = BatchingStreamHandler(stream, **options)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    return handler


def test_routine_lines_go_out_together_once_the_oldest_has_waited() -> None:
    stream = CountingStream()
    handler = batching(stream, interval=0.1)
    for n in range(3):
        handler.handle(leveled(f"request {n}"))
    assert stream.getvalue() == ""

    wait_for(stream.getvalue, "the batch written", within=5, every=0.01)

    assert stream.getvalue() == "INFO request 0\nINFO request 1\nINFO request 2\n"
    assert stream.writes == 1


def test_a_warning_goes_out_at_once_after_what_was_pending() -> None:
    stream = CountingStream()
    handler = batching(stream, interval=60)
    handler.handle(leveled("routine"))
    handler.handle(leveled("look at this", logging.WARNING))

    assert stream.getvalue() == "INFO routine\nWARNING look at this\n"
    handler.handle(leveled("broken", logging.ERROR))
    assert stream.getvalue().endswith("ERROR broken\n")


def test_a_full_batch_goes_out_without_waiting() -> None:
    stream = CountingStream()
    handler = batching(stream, interval=60, batch_bytes=100)
    for n in range(20):
        handler.handle(leveled(f"request number {n:04d}"))  # 25 bytes a line

    assert stream.writes == 5  # every fourth line fills the batch
    assert stream.getvalue().count("\n") == 20


def test_flushing_writes_what_is_pending() -> None:
    stream = CountingStream()
    handler = batching(stream, interval=60)
    handler.handle(leveled("last words"))

    handler.flush()  # what logging.shutdown does at exit

    assert stream.getvalue() == "INFO last words\n"


def test_a_stream_that_is_gone_takes_the_lines_without_an_error() -> None:
    stream = CountingStream()
    handler = batching(stream, interval=60)
    stream.close()
    handler.handle(leveled("nobody reads this", logging.ERROR))
    handler.flush()


def test_services_log_through_a_batching_handler() -> None:
    root = logging.getLogger()
    before, level = root.handlers[:], root.level
    flags = logging.logProcesses, logging.logThreads
    try:
        configure_logging("INFO", json_output=True)
        [handler] = root.handlers
        made = logging.makeLogRecord({"msg": "x"})
    finally:
        root.handlers[:] = before
        root.setLevel(level)
        logging.logProcesses, logging.logThreads = flags
    assert isinstance(handler, BatchingStreamHandler)
    assert isinstance(handler.formatter, JSONFormatter)
    assert made.process is None  # not asked for: no formatter of ours writes it
    assert made.thread is None
