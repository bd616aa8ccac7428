"""OpenAPI 3.1.0 generated from the route table and the pydantic models handlers use.

Every :class:`shared.routing.ApiRoute` contributes one operation; its query, form and body
models become parameters and request bodies, its response model the 200 schema, and its
declared error statuses the error shapes of :mod:`shared.errors`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import TypeAdapter
from starlette.routing import BaseRoute, Mount, Route, compile_path

from shared.routing import ApiRoute, Operation

__all__: list[str] = []  # nothing outside shared uses it

REF = "#/components/schemas/{model}"

ERROR_SCHEMAS: dict[str, Any] = {
    "ErrorModel": {
        "title": "ErrorModel",
        "type": "object",
        "description": 'Error body: {"detail": [<exception name>, <message>]} or a string.',
        "properties": {"detail": {"title": "Detail"}},
    },
    "ValidationError": {
        "title": "ValidationError",
        "type": "object",
        "required": ["loc", "msg", "type"],
        "properties": {
            "loc": {
                "title": "Location",
                "type": "array",
                "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            },
            "msg": {"title": "Message", "type": "string"},
            "type": {"title": "Error Type", "type": "string"},
        },
    },
    "HTTPValidationError": {
        "title": "HTTPValidationError",
        "type": "object",
        "properties": {
            "detail": {
                "title": "Detail",
                "type": "array",
                "items": {"$ref": "#/components/schemas/ValidationError"},
            }
        },
    },
}

STATUS_TEXT = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Payload Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    503: "Service Unavailable",
}

_CONVERTOR_SCHEMAS = {
    "UUIDConvertor": {"type": "string", "format": "uuid"},
    "UUIDParamConvertor": {"type": "string", "format": "uuid"},
    "IntegerConvertor": {"type": "integer"},
    "FloatConvertor": {"type": "number"},
    "PathConvertor": {"type": "string"},
    "StringConvertor": {"type": "string"},
}


def iter_api_routes(routes: Sequence[BaseRoute], prefix: str = "") -> Iterator[tuple[str, Route]]:
    """Yield ``(full path template, route)`` for every route, descending into mounts.

    The template is Starlette's ``path_format`` (``/items/{item_id}``, without a
    convertor such as ``:uuid``), the form OpenAPI path keys take.
    """
    for route in routes:
        if isinstance(route, Mount):
            yield from iter_api_routes(route.routes, prefix + compile_path(route.path)[1])
        elif isinstance(route, Route):
            yield prefix + route.path_format, route


def _operation_id(route: Route, path: str, method: str) -> str:
    # FastAPI's scheme (the reference's ids look like this), unique per path and method
    # even when several domains name their handlers ``get`` or ``list``.
    return re.sub(r"\W", "_", f"{route.name}{path}") + f"_{method}"


class _Schemas:
    """Collects every type's schema in one pass, so shared models get one component."""

    def __init__(self) -> None:
        self._inputs: list[tuple[int, Any, TypeAdapter[Any]]] = []
        self._seen: set[tuple[int, str]] = set()

    def want(self, kind: Any, mode: str) -> None:
        # pydantic answers keyed by (our key, mode), so the key is the type's id alone.
        if (id(kind), mode) not in self._seen:
            self._seen.add((id(kind), mode))
            self._inputs.append((id(kind), mode, TypeAdapter(kind)))

    def build(self) -> tuple[dict[tuple[int, str], Any], dict[str, Any]]:
        """Schemas keyed by ``(id(type), mode)``, and the shared component definitions."""
        if not self._inputs:
            return {}, {}
        mapping, definitions = TypeAdapter.json_schemas(self._inputs, ref_template=REF)
        return {(key, str(mode)): schema for (key, mode), schema in mapping.items()}, dict(
            definitions.get("$defs", {})
        )


def _query_parameters(schema: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    required = set(schema.get("required", []))
    parameters = []
    for name, prop in schema.get("properties", {}).items():
        parameters.append(
            {
                "name": name,
                "in": "query",
                "required": name in required,
                "schema": prop,
                **({"description": prop["description"]} if "description" in prop else {}),
            }
        )
    return parameters


def _error_response(status: int) -> dict[str, Any]:
    error: dict[str, Any] = {"$ref": REF.format(model="ErrorModel")}
    if status == 422:
        # A request that does not validate is HTTPValidationError; one that validates but
        # whose content a service refuses (a NUL in text, a device not pending) is 422 in
        # the entrypoint's error body, as the references answer both.
        error = {"anyOf": [{"$ref": REF.format(model="HTTPValidationError")}, error]}
    return {
        "description": STATUS_TEXT.get(status, "Error"),
        "content": {"application/json": {"schema": error}},
    }


def build_openapi(
    routes: Sequence[BaseRoute],
    *,
    title: str,
    version: str,
    description: str = "",
    token_url: str = "/api/v1/login",
) -> dict[str, Any]:
    """The whole OpenAPI 3.1.0 document for ``routes``."""
    schemas = _Schemas()
    planned: list[tuple[str, str, Route, Operation]] = []
    for path, route in iter_api_routes(routes):
        if not isinstance(route, ApiRoute):
            continue
        op = route.operation
        for method in sorted((route.methods or set()) - {"HEAD"}):
            planned.append((path, method.lower(), route, op))
        for kind, mode in (
            (op.query, "validation"),
            (op.form, "validation"),
            (op.body, "validation"),
            (op.response, "serialization"),
        ):
            if kind is not None:
                schemas.want(kind, mode)

    mapping, defs = schemas.build()
    paths: dict[str, dict[str, Any]] = {}
    for path, method, route, op in planned:
        operation: dict[str, Any] = {
            "summary": op.summary,
            "operationId": op.operation_id or _operation_id(route, path, method),
            "tags": list(op.tags),
            "parameters": [
                {
                    "name": name,
                    "in": "path",
                    "required": True,
                    "schema": _CONVERTOR_SCHEMAS.get(type(conv).__name__, {"type": "string"}),
                }
                for name, conv in route.param_convertors.items()
            ],
        }
        if op.query is not None:
            operation["parameters"] += _query_parameters(
                mapping[(id(op.query), "validation")], defs
            )
        if op.form is not None:
            operation["requestBody"] = {
                # parse_form reads a missing body as an empty form: needed only when a
                # field is (as FastAPI documents a form).
                "required": any(f.is_required() for f in op.form.model_fields.values()),
                "content": {
                    "application/x-www-form-urlencoded": {
                        "schema": mapping[(id(op.form), "validation")]
                    }
                },
            }
        elif op.body is not None:
            operation["requestBody"] = {
                "required": op.body_required,
                "content": {"application/json": {"schema": mapping[(id(op.body), "validation")]}},
            }
        ok: dict[str, Any] = {"description": "Successful Response"}
        if op.status_code == 204:
            ok["description"] = "No Content"  # and no body to describe
        elif op.response is not None:
            ok["content"] = {
                op.response_media_type: {"schema": mapping[(id(op.response), "serialization")]}
            }
        elif op.response_media_type == "application/json":
            ok["content"] = {"application/json": {"schema": {"type": "null"}}}
        else:
            ok["content"] = {op.response_media_type: {"schema": {"type": "string"}}}
        responses: dict[str, Any] = {str(op.status_code): ok}
        statuses = set(op.errors) | {422}
        if op.auth:
            statuses.add(401)
            operation["security"] = [{"CookieOAuth2TokenBearer": []}]
        for status in sorted(statuses):
            responses[str(status)] = _error_response(status)
        for status, text in op.extra_responses.items():
            responses[str(status)] = {"description": text}
        operation["responses"] = responses
        paths.setdefault(path, {})[method] = operation

    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version, "description": description},
        "paths": paths,
        "components": {
            "schemas": {**defs, **ERROR_SCHEMAS},
            "securitySchemes": {
                "CookieOAuth2TokenBearer": {
                    "type": "oauth2",
                    "flows": {"password": {"scopes": {}, "tokenUrl": token_url}},
                }
            },
        },
    }
