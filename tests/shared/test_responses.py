"""Rendering response bodies with pydantic's serializer."""

from __future__ import annotations

import datetime as dt
import json

from pydantic import BaseModel

from shared.errors import Forbidden, OAuthError, RequestValidationFailed
from shared.responses import error_body, error_style_var, render, render_null
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
