"""The request parsing helpers handlers use: query, JSON, form and path parameters."""

from __future__ import annotations

import datetime as dt
import enum
import uuid
from collections.abc import Sequence
from typing import Annotated, Any, Optional

import pytest
from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.requests import Request
from starlette.routing import Match
from starlette.types import Message

from shared.errors import RequestValidationFailed, UnsupportedMediaType
from shared.routing import ApiRoute, api_route, parse_form, parse_json, parse_query, path_param
from shared.types import WireDatetime


class Color(enum.StrEnum):
    RED = "red"


def make_request(
    *,
    query: bytes = b"",
    body: bytes = b"",
    content_type: str | None = None,
    path_params: dict[str, str] | None = None,
) -> Request:
    headers = [(b"content-type", content_type.encode())] if content_type else []
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "query_string": query,
        "headers": headers,
        "path_params": path_params or {},
    }
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return Request(scope, receive)


class Filters(BaseModel):
    name: str | None = None
    tag: list[str] = Field(default_factory=list)
    legacy: Optional[list[str]] = None  # noqa: UP045 (the typing spelling must work too)
    ids: Sequence[uuid.UUID] = ()
    page: int = 1


def test_parse_query_collects_repeated_parameters_into_list_fields():
    query = parse_query(make_request(query=b"tag=a&tag=b&legacy=x&legacy=y"), Filters)
    assert query.tag == ["a", "b"]
    assert query.legacy == ["x", "y"]


def test_parse_query_collects_repeated_parameters_into_sequence_fields():
    first, second = uuid.uuid4(), uuid.uuid4()
    query = parse_query(make_request(query=f"ids={first}&ids={second}".encode()), Filters)
    assert list(query.ids) == [first, second]


def test_parse_query_takes_the_last_value_for_scalar_fields():
    query = parse_query(make_request(query=b"name=first&name=last&page=1&page=3"), Filters)
    assert query.name == "last"
    assert query.page == 3


def test_parse_query_ignores_unknown_parameters():
    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        name: str | None = None

    assert parse_query(make_request(query=b"name=x&bogus=1"), Strict).name == "x"


def test_parse_query_reads_a_single_value_into_a_list_field():
    assert parse_query(make_request(query=b"tag=only"), Filters).tag == ["only"]


def test_parse_query_accepts_a_field_alias():
    class Sorted(BaseModel):
        sort_by: Annotated[str, Field(alias="sortBy")] = "created"

    assert parse_query(make_request(query=b"sortBy=name"), Sorted).sort_by == "name"


def test_parse_query_accepts_name_or_alias_when_the_model_allows_both():
    class Sorted(BaseModel):
        model_config = ConfigDict(populate_by_name=True)
        sort_by: str = Field(default="created", alias="sortBy")

    assert parse_query(make_request(query=b"sort_by=name"), Sorted).sort_by == "name"
    assert parse_query(make_request(query=b"sortBy=size"), Sorted).sort_by == "size"


def test_parse_query_failure_names_the_query_location():
    with pytest.raises(RequestValidationFailed) as info:
        parse_query(make_request(query=b"page=x"), Filters)
    assert [e["loc"] for e in info.value.errors] == [["query", "page"]]


class Thing(BaseModel):
    name: str


async def test_parse_json_accepts_json_suffix_media_types():
    request = make_request(body=b'{"name": "x"}', content_type="application/merge-patch+json")
    assert await parse_json(request, Thing) == Thing(name="x")


async def test_parse_json_without_content_type_reads_json():
    assert await parse_json(make_request(body=b'{"name": "x"}'), Thing) == Thing(name="x")


async def test_parse_json_validates_lists_of_models():
    request = make_request(body=b'[{"name": "a"}, {"name": "b"}]', content_type="application/json")
    assert await parse_json(request, list[Thing]) == [Thing(name="a"), Thing(name="b")]


async def test_parse_json_refuses_form_content_type_with_415():
    request = make_request(body=b"name=x", content_type="application/x-www-form-urlencoded")
    with pytest.raises(UnsupportedMediaType):
        await parse_json(request, Thing)


async def test_parse_json_empty_body_fails_validation():
    with pytest.raises(RequestValidationFailed) as info:
        await parse_json(make_request(content_type="application/json"), Thing)
    assert info.value.errors[0]["loc"] == ["body"]


async def test_parse_json_invalid_utf8_is_a_validation_error():
    with pytest.raises(RequestValidationFailed) as info:
        await parse_json(make_request(body=b'{"name": "\xff"}'), Thing)
    assert info.value.errors[0]["type"] == "json_invalid"


class Typed(BaseModel):
    flag: bool = False
    count: int = 0
    ratio: float = 0.0
    label: str = ""
    when: WireDatetime | None = None
    id: uuid.UUID | None = None
    color: Color | None = None
    every: dt.timedelta | None = None
    note: str | None = "kept"


async def parse_typed(body: bytes) -> Typed:
    return await parse_json(make_request(body=body, content_type="application/json"), Typed)


@pytest.mark.parametrize(
    ("body", "loc", "kind"),
    [
        (b'{"flag": "true"}', ["body", "flag"], "bool_type"),
        (b'{"flag": 1}', ["body", "flag"], "bool_type"),
        (b'{"count": "1"}', ["body", "count"], "int_type"),
        (b'{"count": 1.5}', ["body", "count"], "int_type"),
        (b'{"count": true}', ["body", "count"], "int_type"),
        (b'{"ratio": "0.5"}', ["body", "ratio"], "float_type"),
        (b'{"label": 1}', ["body", "label"], "string_type"),
        (b'{"when": 1700000000}', ["body", "when"], "datetime_type"),
        (b'{"id": 1}', ["body", "id"], "uuid_type"),
        (b'{"every": 60}', ["body", "every"], "time_delta_type"),
        (b'{"color": "blue"}', ["body", "color"], "enum"),
    ],
)
async def test_parse_json_refuses_a_value_of_another_json_type(body, loc, kind):
    with pytest.raises(RequestValidationFailed) as info:
        await parse_typed(body)
    assert info.value.errors == [{"loc": loc, "msg": info.value.errors[0]["msg"], "type": kind}]


async def test_parse_json_takes_each_field_in_its_json_type():
    found = await parse_typed(
        b'{"flag": true, "count": 3, "ratio": 0.5, "label": "x", "note": null}'
    )
    assert (found.flag, found.count, found.ratio, found.label, found.note) == (
        True,
        3,
        0.5,
        "x",
        None,
    )


async def test_parse_json_takes_an_integer_for_a_number():
    assert (await parse_typed(b'{"ratio": 2}')).ratio == 2.0


async def test_parse_json_takes_an_integral_number_for_an_integer():
    found = await parse_typed(b'{"count": 2.0, "ratio": 1.5}')
    assert (found.count, found.ratio) == (2, 1.5)
    assert type(found.count) is int


async def test_parse_json_refuses_an_integral_number_beside_a_lax_value():
    with pytest.raises(RequestValidationFailed) as info:
        await parse_typed(b'{"count": 2.0, "flag": "true"}')
    assert [e["loc"] for e in info.value.errors] == [["body", "flag"]]


async def test_parse_json_refuses_an_integral_number_past_any_integer():
    with pytest.raises(RequestValidationFailed) as info:
        await parse_typed(b'{"count": 1e400}')
    assert [e["loc"] for e in info.value.errors] == [["body", "count"]]


async def test_parse_json_takes_uuids_datetimes_durations_and_enums_from_strings():
    value = uuid.uuid4()
    found = await parse_typed(
        b'{"id": "%s", "when": "2026-11-28T10:25:49.617843+01:00", "every": "PT60S",'
        b' "color": "red"}' % str(value).encode()
    )
    assert found.id == value
    assert found.when == dt.datetime(2026, 11, 28, 9, 25, 49, 617843)
    assert found.every == dt.timedelta(seconds=60)
    assert found.color is Color.RED


class Named(BaseModel):
    name: str
    when: WireDatetime | None = None

    @model_validator(mode="before")
    @classmethod
    def _default_name(cls, data: Any) -> Any:
        return {"name": "derived", **data} if isinstance(data, dict) else data


async def test_parse_json_keeps_a_before_validator_normalising_its_input():
    request = make_request(body=b"{}", content_type="application/json")
    assert await parse_json(request, Named) == Named(name="derived")


async def test_parse_json_malformed_json_keeps_the_decoders_words():
    with pytest.raises(RequestValidationFailed) as info:
        await parse_typed(b'{"flag": ')
    assert info.value.errors == [
        {
            "loc": ["body"],
            "msg": "Invalid JSON: Expecting value: line 1 column 10 (char 9)",
            "type": "json_invalid",
        }
    ]


@pytest.mark.parametrize("depth", [300, 5000])
async def test_parse_json_deep_nesting_is_json_invalid(depth):
    body = b"[" * depth + b"]" * depth
    with pytest.raises(RequestValidationFailed) as info:
        await parse_json(make_request(body=body), list[Any])
    assert info.value.errors == [
        {"loc": ["body"], "msg": "Invalid JSON: nested too deeply", "type": "json_invalid"}
    ]


class Login(BaseModel):
    username: str
    password: str = ""
    scope: list[str] = Field(default_factory=list)


async def test_parse_form_reads_an_urlencoded_body():
    request = make_request(
        body=b"username=admin&password=p%40ss", content_type="application/x-www-form-urlencoded"
    )
    assert await parse_form(request, Login) == Login(username="admin", password="p@ss")


async def test_parse_form_reads_a_multipart_body():
    boundary = "xyz"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="username"\r\n\r\nadmin\r\n'
        f"--{boundary}--\r\n"
    ).encode()
    request = make_request(body=body, content_type=f"multipart/form-data; boundary={boundary}")
    assert (await parse_form(request, Login)).username == "admin"


async def test_parse_form_collects_repeated_fields_into_a_list():
    request = make_request(
        body=b"username=a&scope=x&scope=y", content_type="application/x-www-form-urlencoded"
    )
    assert (await parse_form(request, Login)).scope == ["x", "y"]


async def test_parse_form_reads_a_non_form_body_as_an_empty_form():
    request = make_request(body=b'{"username": "admin"}', content_type="application/json")
    with pytest.raises(RequestValidationFailed) as info:
        await parse_form(request, Login)
    assert info.value.errors[0]["loc"] == ["body", "username"]


def test_path_param_converts_to_the_requested_type():
    value = uuid.uuid4()
    request = make_request(path_params={"thing_id": str(value)})
    assert path_param(request, "thing_id", uuid.UUID) == value


def test_path_param_that_does_not_convert_is_a_422_on_the_path():
    request = make_request(path_params={"thing_id": "nope"})
    with pytest.raises(RequestValidationFailed) as info:
        path_param(request, "thing_id", uuid.UUID)
    assert info.value.status_code == 422
    assert info.value.errors[0]["loc"] == ["path", "thing_id"]


def test_api_route_declares_one_method_and_its_operation():
    async def handler(_request: Request):
        raise NotImplementedError

    route = api_route("/things", handler, method="POST", summary="Create", body=Thing)
    assert isinstance(route, ApiRoute)
    assert route.methods == {"POST"}
    assert route.operation.summary == "Create"
    assert route.operation.body is Thing


def test_a_uuid_param_segment_matches_any_segment_as_a_string():
    """``{name:uuid_param}`` leaves the parsing (and the 422 of a bad id) to the handler,
    where Starlette's ``{name:uuid}`` would answer a bad one 404."""

    async def handler(_request: Request):
        raise NotImplementedError

    route = api_route("/things/{thing_id:uuid_param}", handler, method="GET", summary="Get")
    for segment in ("nope", "3f2a9c1e-0b7d-4e52-9a61-7c8d2e4f5a10"):
        scope = {"type": "http", "method": "GET", "path": f"/things/{segment}"}
        match, child = route.matches(scope)
        assert match is Match.FULL
        assert child["path_params"] == {"thing_id": segment}
    assert route.path_format == "/things/{thing_id}"
