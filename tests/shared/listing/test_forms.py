"""The documented forms of list parameters: what a pattern admits the engine takes, what it
refuses the engine refuses, and the validator schemathesis uses reads it as Python does."""

from __future__ import annotations

import math
import re
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.requests import Request
from starlette.responses import Response

from shared.errors import RequestValidationFailed
from shared.listing import Kind, ListSpec, SortKey, column_field, parse, resolve_sort
from shared.listing.expressions import FilterError, is_blank
from shared.listing.forms import (
    BOOL_FILTER,
    DATETIME_FILTER,
    FLOAT_FILTER,
    INT_FILTER,
    TEXT_FILTER_VALUE,
    filter_schema,
    sort_by_schema,
    whole,
)
from shared.listing.spec import COMMON_PARAMS
from shared.openapi import build_openapi
from shared.routing import api_route

INT32 = range(-(2**31), 2**31)
SPEC = ListSpec(
    resource="gadget",
    id_column=None,
    fields=[
        column_field("created", None, Kind.DATETIME),
        column_field("count", None, Kind.INT),
        column_field("weight", None, Kind.FLOAT),
        column_field("active", None, Kind.BOOL, description="Whether it is on"),
        column_field("name", None, Kind.STRING),
    ],
    sort_keys=[SortKey("created", None), SortKey("name", None)],
)
TEXT_FILTER = {"type": "string", "pattern": whole(TEXT_FILTER_VALUE)}


def drawn(pattern: str) -> st.SearchStrategy[str]:
    """Values of ``pattern`` as JSON Schema means it (and schemathesis draws them): its
    closing ``$`` is the end of the text, not also before a final line break."""
    return st.from_regex(pattern.removesuffix("$") + r"\Z")


def admits(pattern: str, value: str) -> bool:
    """What the validator behind schemathesis says; Python's ``re`` must agree."""
    valid = jsonschema_rs.validator_for({"type": "string", "pattern": pattern}).is_valid(value)
    assert valid == bool(re.search(pattern.removesuffix("$") + r"\Z", value)), value
    return bool(valid)


def taken(value: str, kind: Kind) -> Any:
    """The filter ``value`` of ``kind`` as the engine reads it (``None`` when blank)."""
    return None if is_blank(value, kind) else parse(value, kind)


@settings(max_examples=300, deadline=None)
@given(st.data())
@pytest.mark.parametrize(
    ("schema", "kind"),
    [
        (DATETIME_FILTER, Kind.DATETIME),
        (INT_FILTER, Kind.INT),
        (FLOAT_FILTER, Kind.FLOAT),
        (BOOL_FILTER, Kind.BOOL),
    ],
)
def test_what_a_filter_pattern_admits_the_filter_takes(
    schema: dict[str, Any], kind: Kind, data: st.DataObject
) -> None:
    value = data.draw(drawn(schema["pattern"]))
    assert admits(schema["pattern"], value)
    cond = taken(value, kind)
    if kind is Kind.INT and cond is not None and cond.value is not None:
        assert cond.value in INT32  # what PostgreSQL's integer holds


@pytest.mark.parametrize(
    ("schema", "kind", "value"),
    [
        (DATETIME_FILTER, Kind.DATETIME, "gte:"),
        (DATETIME_FILTER, Kind.DATETIME, "abc"),
        (DATETIME_FILTER, Kind.DATETIME, "2026-13-01"),
        (DATETIME_FILTER, Kind.DATETIME, "equals:2026-02-30"),
        (DATETIME_FILTER, Kind.DATETIME, "in:2026-01-01"),
        (DATETIME_FILTER, Kind.DATETIME, "isnull:2026-01-01"),
        (INT_FILTER, Kind.INT, "x"),
        (INT_FILTER, Kind.INT, "gt:"),
        (INT_FILTER, Kind.INT, "1.5"),
        (INT_FILTER, Kind.INT, "contains:1"),
        (INT_FILTER, Kind.INT, "oneof:[1]"),
        (INT_FILTER, Kind.INT, "isnull:1"),
        (FLOAT_FILTER, Kind.FLOAT, "x"),
        (FLOAT_FILTER, Kind.FLOAT, "gt:"),
        (FLOAT_FILTER, Kind.FLOAT, "nan"),
        (FLOAT_FILTER, Kind.FLOAT, "1.5.0"),
        (FLOAT_FILTER, Kind.FLOAT, "contains:1"),
        (FLOAT_FILTER, Kind.FLOAT, "oneof:[1.5]"),
        (FLOAT_FILTER, Kind.FLOAT, "in:1,2"),
        (FLOAT_FILTER, Kind.FLOAT, "isnull:1"),
        (BOOL_FILTER, Kind.BOOL, "yes"),
        (BOOL_FILTER, Kind.BOOL, "equals:"),
        (BOOL_FILTER, Kind.BOOL, "gt:1"),
        (BOOL_FILTER, Kind.BOOL, "2"),
        (TEXT_FILTER, Kind.STRING, "gt:abc"),
        (TEXT_FILTER, Kind.STRING, "in:a,b"),
        (TEXT_FILTER, Kind.STRING, "isnull:a"),
        (TEXT_FILTER, Kind.STRING, "oneof:a"),
        (TEXT_FILTER, Kind.STRING, 'oneof:[{"a": 1}]'),
    ],
)
def test_a_filter_pattern_refuses_what_the_filter_refuses(
    schema: dict[str, Any], kind: Kind, value: str
) -> None:
    assert not admits(schema["pattern"], value)
    with pytest.raises(FilterError):
        parse(value, kind)


@pytest.mark.parametrize(
    ("value", "admitted"),
    [
        ("2147483647", True),
        ("lte:-2147483648", True),
        (" +007 ", True),
        ("2147483648", False),
        ("-2147483649", False),
        ("gt:99999999999", False),
    ],
)
def test_the_int_filter_pattern_admits_what_postgresql_s_integer_holds(
    value: str, admitted: bool
) -> None:
    assert admits(INT_FILTER["pattern"], value) is admitted
    assert (parse(value, Kind.INT).value in INT32) is admitted


@pytest.mark.parametrize(
    ("value", "number"),
    [("1.5", 1.5), ("gte:-.5", -0.5), (" 3.6E3 ", 3600.0), ("lt:7.", 7.0), ("1e999", math.inf)],
)
def test_the_float_filter_pattern_admits_decimal_numbers(value: str, number: float) -> None:
    assert admits(FLOAT_FILTER["pattern"], value)
    assert parse(value, Kind.FLOAT).value == number


@pytest.mark.parametrize("value", ["isnotnull:", " ", ""])
def test_a_blank_or_null_test_float_filter_is_admitted(value: str) -> None:
    assert admits(FLOAT_FILTER["pattern"], value)
    taken(value, Kind.FLOAT)


@pytest.mark.parametrize("value", ["true", "FALSE", "1", "notequals:0", "isnotnull:", " ", ""])
def test_the_bool_filter_pattern_admits_every_spelling_of_a_boolean(value: str) -> None:
    assert admits(BOOL_FILTER["pattern"], value)
    taken(value, Kind.BOOL)


@settings(max_examples=300, deadline=None)
@given(drawn(TEXT_FILTER["pattern"]))
def test_what_the_text_filter_pattern_admits_the_filter_takes(value: str) -> None:
    assert admits(TEXT_FILTER["pattern"], value)
    parse(value, Kind.STRING)


@pytest.mark.parametrize("value", ["weird:value", "", "contains:a:b", 'oneof:["a","b"]', "lt:1e3"])
def test_the_text_filter_pattern_admits_literals_and_operators(value: str) -> None:
    assert admits(TEXT_FILTER["pattern"], value)
    parse(value, Kind.STRING)


SORT_BY = sort_by_schema(["created", "name", "page"], "created", COMMON_PARAMS)


@settings(max_examples=300, deadline=None)
@given(drawn(SORT_BY["pattern"]))
def test_what_the_sort_by_pattern_admits_the_list_sorts_by(value: str) -> None:
    assert admits(SORT_BY["pattern"], value)
    resolve_sort(SPEC, value)


@pytest.mark.parametrize("value", ["password", "desc:page", "asc:desc:name", "name ", "desc:"])
def test_the_sort_by_pattern_refuses_what_the_list_refuses(value: str) -> None:
    assert not admits(SORT_BY["pattern"], value)
    with pytest.raises(RequestValidationFailed):
        resolve_sort(SPEC, value)


async def handler(_request: Request) -> Response:
    raise NotImplementedError


def parameters(spec: ListSpec) -> dict[str, dict[str, Any]]:
    route = api_route("/gadgets", handler, method="GET", summary="List", query=spec.query_model())
    document = build_openapi([route], title="t", version="1")
    return {p["name"]: p for p in document["paths"]["/gadgets"]["get"]["parameters"]}


def test_a_datetime_filter_parameter_is_documented_with_its_forms() -> None:
    assert parameters(SPEC)["created"]["schema"] == DATETIME_FILTER


def test_int_float_and_bool_filters_are_documented_with_their_forms() -> None:
    documented = parameters(SPEC)
    assert documented["count"]["schema"] == INT_FILTER
    assert documented["weight"]["schema"] == FLOAT_FILTER
    assert documented["active"]["schema"] == filter_schema(Kind.BOOL, "Whether it is on")
    assert documented["active"]["description"].startswith("Whether it is on. bool filter")


def test_sort_by_is_documented_with_the_spec_s_keys() -> None:
    sort_by = parameters(SPEC)["sort_by"]["schema"]
    assert sort_by == sort_by_schema(["created", "name"], "created", COMMON_PARAMS)
    assert admits(sort_by["pattern"], sort_by["default"])


def test_a_field_s_own_schema_replaces_its_kind_s() -> None:
    own = {"type": "array", "items": {"type": "string", "pattern": "^a$"}}
    spec = ListSpec(
        resource="gadget",
        id_column=None,
        fields=[column_field("tags", None, Kind.STRING, schema=own)],
        sort_keys=[SortKey("created", None)],
    )
    assert parameters(spec)["tags"]["schema"] == own


def test_a_text_filter_keeps_pydantic_s_any_string() -> None:
    assert parameters(SPEC)["name"]["schema"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
