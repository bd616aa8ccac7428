"""Rendering: response models, ``null`` bodies and errors in the platform's wire shape."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel
from starlette.responses import Response

from shared.errors import PlatformError
from shared.types import type_adapter

JSON = "application/json"


class JSONBytesResponse(Response):
    """A JSON response whose body is already serialized (pydantic's fast path)."""

    media_type = JSON


def render(
    value: BaseModel | Sequence[BaseModel] | Any,
    *,
    status_code: int = 200,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """Serialize a model, a list of models or a plain value with pydantic's serializer."""
    if isinstance(value, BaseModel):
        body = value.model_dump_json()
    else:
        body = type_adapter(type(value)).dump_json(value).decode() if value is not None else "null"
    return JSONBytesResponse(body, status_code=status_code, headers=dict(headers or {}))


def render_null() -> Response:
    """The reference's ``200 null`` answer for deletes and logout."""
    return JSONBytesResponse("null")


def error_body(exc: PlatformError) -> bytes:
    return json.dumps(exc.body(), default=str).encode()


def error_response(exc: PlatformError, request_id: str | None = None) -> Response:
    headers = dict(exc.headers)
    if request_id:
        headers["X-Request-ID"] = request_id
    return Response(error_body(exc), status_code=exc.status_code, headers=headers, media_type=JSON)
