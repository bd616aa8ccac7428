"""Rendering: response models, ``null`` bodies and errors in the platform's wire shape."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Literal

from pydantic import BaseModel
from starlette.responses import Response

from shared.errors import PlatformError
from shared.types import type_adapter

JSON = "application/json"

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
"""Headers for an answer that carries a secret (a token, a key): never cached, and never
kept for an idempotent replay (see :mod:`shared.idempotency`)."""

ErrorStyle = Literal["platform", "message"]
error_style_var: ContextVar[ErrorStyle] = ContextVar("error_style", default="platform")
"""How errors render while serving the current request: ``platform`` (the ZenML shape
``{"detail": [<wire name>, <message>]}``) or ``message`` (``{"detail": "<message>"}``, the
agent-run server's shape). Set per request by :class:`shared.middleware.ServiceMiddleware`.
"""


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
    """The error's JSON body in the current request's :data:`error_style_var`. Errors with
    a shape of their own (request validation, OAuth, plain-detail errors) keep it."""
    body = exc.body()
    kind = type(exc)
    own_shape = kind.detail is not PlatformError.detail or kind.body is not PlatformError.body
    if error_style_var.get() == "message" and not own_shape:
        body = {"detail": exc.message}
    return json.dumps(body, default=str).encode()


def error_response(exc: PlatformError, request_id: str | None = None) -> Response:
    headers = dict(exc.headers)
    if request_id:
        headers["X-Request-ID"] = request_id
    return Response(error_body(exc), status_code=exc.status_code, headers=headers, media_type=JSON)
