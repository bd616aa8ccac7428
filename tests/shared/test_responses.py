"""Rendering response bodies with pydantic's serializer."""

from __future__ import annotations

import datetime as dt
import enum
import json
import uuid
from typing import Any

import pydantic_core
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from shared.errors import Forbidden, OAuthError, RequestValidationFailed
from shared.pagination import Page
from shared.responses import dumps, error_body, error_style_var, render, render_null
from shared.types import WireDatetime


class Thing(BaseModel):
    name: str
    created: WireDatetime


THING = Thing(name="a", created=dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC))


def test_render_serializes_a_model_with_its_wire_types():
    response = render(THING)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert json.loads(bytes(response.body)) == {
        "name": "a",
        "created": "2026-01-02T03:04:05.000006",
    }


def test_render_serializes_a_list_of_models():
    body = json.loads(bytes(render([THING, THING]).body))
    assert body == [{"name": "a", "created": "2026-01-02T03:04:05.000006"}] * 2


def test_render_keeps_status_and_headers():
    response = render({"ok": True}, status_code=202, headers={"X-Thing": "1"})
    assert response.status_code == 202
    assert response.headers["x-thing"] == "1"
    assert bytes(response.body) == b'{"ok":true}'


def test_render_none_and_render_null_send_json_null():
    assert bytes(render(None).body) == b"null"
    assert bytes(render_null().body) == b"null"
    assert render_null().headers["content-type"] == "application/json"


def test_message_style_renders_the_detail_as_a_plain_message():
    token = error_style_var.set("message")
    try:
        body = json.loads(error_body(Forbidden("Not yours.")))
    finally:
        error_style_var.reset(token)
    assert body == {"detail": "Not yours."}


def test_message_style_keeps_the_validation_shape():
    token = error_style_var.set("message")
    try:
        body = json.loads(error_body(RequestValidationFailed.single(["body", "name"], "bad")))
    finally:
        error_style_var.reset(token)
    assert body == {"detail": [{"loc": ["body", "name"], "msg": "bad", "type": "value_error"}]}


def test_message_style_keeps_the_oauth_shape():
    token = error_style_var.set("message")
    try:
        body = json.loads(error_body(OAuthError("invalid_grant", "No.")))
    finally:
        error_style_var.reset(token)
    assert body["error"] == "invalid_grant"


def test_platform_style_is_the_default():
    assert json.loads(error_body(Forbidden("Not yours."))) == {
        "detail": ["IllegalOperationError", "Not yours."]
    }


class Color(enum.Enum):
    RED = "red"
    COUNT = 3


class Kind(enum.StrEnum):
    ONE = "one"


_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.uuids()
    | st.datetimes(timezones=st.none() | st.just(dt.UTC) | st.timezones())
    | st.dates()
    | st.times()
    | st.decimals(allow_nan=False, allow_infinity=False)
    | st.sampled_from([*Color, *Kind])
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=8), inner, max_size=5)
        | st.dictionaries(st.integers(), inner, min_size=1, max_size=2)
        | st.builds(lambda thing: [thing], st.just(THING))
    ),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(_values)
def test_dumps_writes_what_pydantic_writes(value):
    # Infinities and NaN as null: what models and type adapters write (ser_json_inf_nan).
    assert dumps(value) == pydantic_core.to_json(value, inf_nan_mode="null")


def test_a_page_renders_as_its_model_would():
    items = [
        {"id": uuid.UUID(int=i), "at": dt.datetime(2026, 1, 2, 3, 4, 5, i), "tags": [THING]}
        for i in range(3)
    ]
    page: Page[Any] = Page(index=2, max_size=3, total_pages=4, total=10, items=items)
    assert bytes(render(page).body) == page.model_dump_json().encode()


def test_plain_values_render_as_pydantic_writes_them():
    value = [{"id": uuid.UUID(int=7), "n": 2**80, "at": dt.datetime(2026, 1, 2, tzinfo=dt.UTC)}]
    assert bytes(render(value).body) == pydantic_core.to_json(value, inf_nan_mode="null")
    assert bytes(render([float("inf")]).body) == b"[null]"
    assert bytes(render(None).body) == b"null"


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    created: WireDatetime


def test_a_frozen_model_is_written_as_pydantic_writes_it_every_time():
    frozen = Frozen(name="a", created=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC))
    value = {
        "items": [frozen, {"again": frozen}],
        "other": Frozen(name="b", created=frozen.created),
    }
    for _ in range(2):  # the second time from what the first kept
        assert dumps(value) == pydantic_core.to_json(value, inf_nan_mode="null")
