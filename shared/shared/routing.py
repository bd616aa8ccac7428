"""Routes that describe themselves, and the small parsing helpers handlers use.

A route is declared once with :func:`api_route`; the declaration carries the pydantic
models its handler parses and renders, and :mod:`shared.openapi` builds the service's
OpenAPI document from exactly those. A path segment the handler parses as a UUID is
declared ``{name:uuid_param}`` (:class:`UUIDParamConvertor`: any segment matches, so a bad
one is the reference's 422, and the document types it ``format: uuid``). A path one route
spells with a literal segment belongs to that route alone: :func:`literal_segments_first`
has ``/runs/{run_id:uuid_param}`` step aside for ``/runs/statistics``, which then answers
a method it does not take with 405 and its own ``Allow``. Handlers stay thin::

    async def get(request: Request) -> Response:
        user_id = path_param(request, "user_id", UUID)
        query = parse_query(request, HydrateQuery)
        async with transaction(request) as session:
            user = await UserService(session).get(user_id)
        return render(user_response(user, hydrate=query.hydrate))
"""

from __future__ import annotations

import collections.abc
import functools
import json
import re
import types
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from starlette.convertors import StringConvertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.types import Scope

from shared.errors import RequestValidationFailed, UnsupportedMediaType
from shared.types import type_adapter

__all__ = [
    "ApiRoute",
    "UUIDParamConvertor",
    "api_route",
    "literal_segments_first",
    "parse_form",
    "parse_json",
    "parse_query",
    "path_ids",
    "path_param",
    "validate_json",
]

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

Handler = Callable[[Request], Awaitable[Response]]

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


@dataclass(frozen=True)
class Operation:
    """What OpenAPI needs to know about one route."""

    summary: str
    tags: Sequence[str] = ()
    query: type[BaseModel] | None = None
    body: Any = None  # a model, or a type such as list[Model]
    body_required: bool = True  # False: the handler reads a missing body as the defaults
    form: type[BaseModel] | None = None
    response: Any = None  # a model, a type, or None for ``null``
    response_media_type: str = "application/json"
    status_code: int = 200
    auth: bool = True
    errors: Sequence[int] = ()
    extra_responses: Mapping[int, str] = field(default_factory=dict)
    operation_id: str | None = None


class UUIDParamConvertor(StringConvertor):
    """``{name:uuid_param}``: a segment the handler parses as a UUID (:func:`path_param`
    with ``uuid.UUID``, or :func:`path_ids`). It matches any segment, as ``{name}`` does,
    so one that is not a UUID reaches the handler and is its 422 naming the parameter (the
    reference's answer), not Starlette's 404; the OpenAPI document types it ``format: uuid``.
    """


register_url_convertor("uuid_param", UUIDParamConvertor())


class ApiRoute(Route):
    """A Starlette route that carries its :class:`Operation`."""

    def __init__(
        self,
        path: str,
        endpoint: Handler,
        *,
        methods: Sequence[str],
        operation: Operation,
        name: str | None = None,
    ) -> None:
        super().__init__(path, endpoint, methods=list(methods), name=name)
        self.operation = operation
        self.yields_to: tuple[Route, ...] = ()
        """The routes whose paths this one steps aside for (:func:`literal_segments_first`)."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child_scope = super().matches(scope)
        if match is not Match.NONE and any(
            route.matches(scope)[0] is not Match.NONE for route in self.yields_to
        ):
            return Match.NONE, {}
        return match, child_scope


def api_route(
    path: str,
    endpoint: Handler,
    *,
    method: str,
    summary: str,
    **operation: Any,
) -> ApiRoute:
    """Declare one operation (one method on one path)."""
    return ApiRoute(
        path,
        endpoint,
        methods=[method],
        operation=Operation(summary=summary, **operation),
    )


_PARAMETER = re.compile(r"^\{[^{}]*\}$")


def _segments(path_format: str) -> tuple[str | None, ...]:
    """A path's segments, ``None`` for a whole-segment parameter."""
    return tuple(None if _PARAMETER.match(s) else s for s in path_format.split("/"))


def _more_specific(first: tuple[str | None, ...], second: tuple[str | None, ...]) -> bool:
    """Whether some path matches both templates (of as many segments) and, where they
    first differ, ``first`` spells a literal segment and ``second`` a parameter."""
    decided = False
    for mine, theirs in zip(first, second, strict=True):
        if mine is not None and theirs is not None and mine != theirs:
            return False
        if not decided and (mine is None) != (theirs is None):
            if mine is None:
                return False
            decided = True
    return decided


@functools.lru_cache(maxsize=32)
def _step_aside_plan(paths: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
    """For each of ``paths``, the indexes of those it steps aside for. Only paths of as
    many segments can both match one path, so each is compared within its length; an app
    built again (each in-process test builds its own) reuses the plan of its path list."""
    shapes = [_segments(path) for path in paths]
    by_length: dict[int, list[int]] = {}
    for index, shape in enumerate(shapes):
        by_length.setdefault(len(shape), []).append(index)
    return tuple(
        tuple(
            other
            for other in by_length[len(shape)]
            if None in shape and _more_specific(shapes[other], shape)
        )
        for shape in shapes
    )


def literal_segments_first(routes: Sequence[BaseRoute]) -> list[BaseRoute]:
    """``routes``, each :class:`ApiRoute` with a parameter segment set to step aside for
    the routes that spell a literal where it has that parameter (in each mount alike).

    Starlette takes the first route matching path and method, so ``PATCH /flavors/sync``
    (which only ``POST /flavors/sync`` serves) would reach ``PATCH /flavors/{flavor_id}``
    and be its 422 for a bad UUID; stepping aside, ``/flavors/{flavor_id}`` no longer
    matches ``/flavors/sync``, whose route answers 405 with the methods it takes.
    """
    flat = [route for route in routes if isinstance(route, Route)]
    plan = _step_aside_plan(tuple(route.path_format for route in flat))
    for route, yields in zip(flat, plan, strict=True):
        if isinstance(route, ApiRoute):
            route.yields_to = tuple(flat[other] for other in yields)
    for mount in routes:
        if isinstance(mount, Mount):
            literal_segments_first(mount.routes)
    return list(routes)


def path_param(request: Request, name: str, kind: type[T]) -> T:
    """A path parameter converted to ``kind`` (422 when it does not convert)."""
    raw = request.path_params[name]
    try:
        value: T = type_adapter(kind).validate_python(raw)
        return value
    except ValidationError as exc:
        raise RequestValidationFailed.from_pydantic(exc, ("path", name)) from None


def path_ids(request: Request) -> dict[str, uuid.UUID]:
    """Every path parameter as a UUID (one 422 naming each that is not), for a handler
    whose path holds only ids: one that refuses the operation still checks its path
    first, as the reference (FastAPI) does before its endpoint runs."""
    ids: dict[str, uuid.UUID] = {}
    errors: list[dict[str, Any]] = []  # pydantic's, each ``loc`` under its parameter's name
    for name, raw in request.path_params.items():
        try:
            ids[name] = type_adapter(uuid.UUID).validate_python(raw)
        except ValidationError as exc:
            errors += [{**e, "loc": (name, *e["loc"])} for e in exc.errors(include_url=False)]
    if errors:
        raise RequestValidationFailed.from_errors(errors, "path")
    return ids


_MANY_ORIGINS = (list, tuple, set, frozenset, collections.abc.Sequence, collections.abc.Set)


def _takes_many(annotation: Any) -> bool:
    """Whether a field collects repeated parameters: ``list[str]``, ``list[str] | None``,
    ``Optional[List[str]]``, ``Sequence[str]``, ``set[UUID]`` …"""
    if annotation in _MANY_ORIGINS:
        return True
    origin = get_origin(annotation)
    if origin in _MANY_ORIGINS:
        return True
    if origin is Annotated:
        return _takes_many(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return any(_takes_many(arg) for arg in get_args(annotation))
    return False


@functools.cache
def _query_keys(model: type[BaseModel]) -> dict[str, bool]:
    """Each query key the model accepts (field names and string aliases) → whether its
    field collects repeated parameters (worked out once per model)."""
    keys: dict[str, bool] = {}
    for name, info in model.model_fields.items():
        many = _takes_many(info.annotation)
        keys[name] = many
        for alias in (info.alias, info.validation_alias):
            if isinstance(alias, str):
                keys[alias] = many
    return keys


def parse_query(request: Request, model: type[M]) -> M:
    """Validate the query string into ``model``.

    Fields annotated as lists collect repeated parameters; other fields take the last
    value. Unknown parameters are ignored, as the reference does. Keys are passed on as
    sent, so the model's own alias rules decide whether a name or an alias is accepted.
    """
    keys = _query_keys(model)
    data: dict[str, Any] = {}
    for key in request.query_params:
        many = keys.get(key)
        if many is None:
            continue
        values = request.query_params.getlist(key)
        data[key] = values if many else values[-1]
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestValidationFailed.from_pydantic(exc, "query") from None


def _content_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


async def parse_json(request: Request, kind: type[T]) -> T:
    """Validate a JSON body (any type pydantic can validate: a model, ``list[Model]`` …) as
    :func:`validate_json` does; 415 on a content type other than JSON's."""
    content_type = _content_type(request)
    if content_type and content_type != "application/json" and not content_type.endswith("+json"):
        raise UnsupportedMediaType(f"Unsupported content type '{content_type}'; send JSON.")
    return validate_json(await request.body(), kind)


def validate_json(raw: bytes, kind: type[T], location: Sequence[str] = ("body",)) -> T:
    """Validate JSON text as a request's JSON at ``location`` (422s say it).

    pydantic parses and validates the bytes in one pass, in strict mode for JSON input:
    a value must have the JSON type its schema states (``"true"`` or ``1`` is no boolean,
    ``"1"`` or ``1.5`` no integer, a number no string or datetime), while the types JSON
    spells as strings still come from strings (UUIDs, datetimes, durations, enums). As
    JSON Schema has it, an integer is a number and ``2.0`` an integer. What a ``mode="before"``
    validator returns is validated as Python input, where strict mode takes no string for
    a datetime: such a validator hands datetimes on parsed. Empty text validates as
    ``None``.
    """
    adapter = type_adapter(kind)
    try:
        result: T = (
            adapter.validate_json(raw, strict=True) if raw else adapter.validate_python(None)
        )
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        if errors[0]["type"] == "json_invalid" and not errors[0]["loc"]:
            raise _invalid_json(raw, errors[0]["msg"]) from None
        # An integer written as 2.0 is one to JSON Schema: it is not refused, and once it
        # is all strict mode refused, lax mode takes it (every other value has its type).
        refused = [e for e in errors if not _integral_float(e)]
        if refused:
            raise RequestValidationFailed.from_errors(refused, location) from None
        try:
            result = adapter.validate_json(raw)
        except ValidationError as lax:  # 1e300: an integer too large for lax mode
            raise RequestValidationFailed.from_pydantic(lax, location) from None
    return result


def _integral_float(error: Any) -> bool:
    value = error["input"]
    return error["type"] == "int_type" and isinstance(value, float) and value.is_integer()


def _invalid_json(raw: bytes, parser_message: str) -> RequestValidationFailed:
    """The 422 of a body that is no JSON, worded as Python's decoder words it (what the
    answer always said; parsed again only on this failing path). A body that decoder takes
    but pydantic's parser refuses is nested past that parser's 200 levels (or holds a lone
    surrogate), with the answer deep nesting always had."""
    try:
        json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        message = f"Invalid JSON: {exc}"
    except RecursionError:
        # Deep nesting ("[[[[…") exhausts the decoder's stack: a bad request, not a 500.
        message = "Invalid JSON: nested too deeply"
    else:
        deep = "recursion limit exceeded" in parser_message
        message = "Invalid JSON: nested too deeply" if deep else parser_message
    return RequestValidationFailed.single(["body"], message, "json_invalid")


async def parse_form(request: Request, model: type[M]) -> M:
    """Validate an urlencoded or multipart form. A non-form body reads as an empty form,
    as the reference's token endpoint does."""
    data: dict[str, Any] = {}
    if _content_type(request) in FORM_TYPES:
        async with request.form() as form:
            for key in form:
                values = form.getlist(key)
                data[key] = [v for v in values if isinstance(v, str)]
    flat = {k: (v[-1] if len(v) == 1 else v) for k, v in data.items() if v}
    try:
        return model.model_validate(flat)
    except ValidationError as exc:
        raise RequestValidationFailed.from_pydantic(exc, "body") from None
