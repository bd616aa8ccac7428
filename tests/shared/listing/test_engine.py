"""Parsing list requests: filters, sort keys, paging parameters and their errors."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlencode

import pytest
from sqlalchemy import Column, ForeignKey, MetaData, String, Table, Uuid, bindparam, select
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import Request

from shared.db import create_engine, create_sessionmaker, session_scope
from shared.errors import RequestValidationFailed
from shared.listing import (
    Condition,
    Field,
    Kind,
    ListSpec,
    LogicalOperator,
    Op,
    SortKey,
    column_field,
    fetch_page,
    name_or_id,
    parse_list,
    read_list,
)
from shared.listing.sql import escape_like
from tests.shared.listing.test_engine_properties import FIELDS, SPEC

metadata = MetaData()
owners = Table(
    "listing_owners",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("name", String(20), nullable=False),
)
pets = Table(
    "listing_pets",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("name", String(20), nullable=False),
    Column("owner_id", Uuid, ForeignKey("listing_owners.id"), nullable=False),
)
PETS = ListSpec(
    resource="pet",
    id_column=pets.c.id,
    fields=[
        column_field("name", pets.c.name, Kind.STRING),
        name_or_id("owner", pets.c.owner_id, target_id=owners.c.id, target_names=[owners.c.name]),
    ],
    sort_keys=[SortKey("name", pets.c.name), SortKey("created", pets.c.name)],
)
ANN, BOB = uuid.UUID(int=1), uuid.UUID(int=2)


def request(*pairs: tuple[str, str]) -> Request:
    return Request({"type": "http", "query_string": urlencode(pairs).encode(), "headers": []})


def failure(spec: ListSpec, *pairs: tuple[str, str]) -> dict[str, object]:
    with pytest.raises(RequestValidationFailed) as caught:
        parse_list(request(*pairs), spec)
    (error,) = caught.value.errors
    return error


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url)
    async with engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
        await conn.execute(
            owners.insert(), [{"id": ANN, "name": "ann"}, {"id": BOB, "name": "bob"}]
        )
        await conn.execute(
            pets.insert(),
            [
                {"id": uuid.UUID(int=10 + i), "name": name, "owner_id": owner}
                for i, (name, owner) in enumerate(
                    [("rex", ANN), ("tom", ANN), ("kit", BOB), ("a_b", BOB), ("axb", BOB)]
                )
            ],
        )
    yield engine
    await engine.dispose()


async def names(engine: AsyncEngine, *pairs: tuple[str, str]) -> list[str]:
    listing = parse_list(request(*pairs), PETS)
    async with session_scope(create_sessionmaker(engine)) as session:
        _total, rows = await fetch_page(session, PETS, listing, select(pets))
    return [row.name for row in rows]


def test_value_without_operator_is_an_equals_match():
    listing = parse_list(request(("name", "weird:value")), SPEC)
    ((_, cond),) = listing.conditions
    assert (cond.op, cond.value) == (Op.EQUALS, "weird:value")


def test_repeated_parameters_give_one_condition_each():
    listing = parse_list(request(("name", "a"), ("name", "contains:b")), SPEC)
    assert [c.op for _, c in listing.conditions] == [Op.EQUALS, Op.CONTAINS]


@pytest.mark.parametrize(
    ("param", "value", "message"),
    [
        ("name", "oneof:a,b", "JSON list"),
        ("name", "oneof:{}", "JSON list"),
        ("name", "isnull:x", "takes no value"),
        ("name", "in:a,b", "not supported"),
        ("count", "gt:many", "The int filter only works with integer values."),
        ("count", "contains:1", "not supported"),
        ("weight", "heavy", "not a number"),
        ("weight", "gte:nan", "not a number"),
        ("weight", "oneof:[1.5]", "not supported"),
        ("flag", "maybe", "not a boolean"),
        ("flag", "gt:1", "not supported"),
        ("created", "yesterday", "not a datetime"),
        ("created", "gte:", "not a datetime"),
        ("created", "2026-11-22T25:00:00Z", "not a datetime"),
        ("created", "in:2026-01-01 00:00:00", "two datetimes"),
        ("created", "in:2026-01-01T00:00:00Z,", "not a datetime"),
        ("id", 'oneof:["nope"]', "not a valid UUID"),
        ("name", "gt:abc", "not a number"),
    ],
)
def test_malformed_filter_is_422_naming_the_parameter(param, value, message):
    error = failure(SPEC, (param, value))
    assert error["loc"] == ["query", param]
    assert message in str(error["msg"])


def test_malformed_datetime_names_both_accepted_forms():
    message = str(failure(SPEC, ("created", "2026-13-01"))["msg"])
    assert "'%Y-%m-%d %H:%M:%S'" in message
    assert "ISO 8601" in message


UTC = dt.UTC
NOON = dt.datetime(2026, 11, 22, 10, 25, 49, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-22 10:25:49", NOON),
        ("2026-11-22T10:25:49", NOON),
        ("2026-11-22T10:25:49Z", NOON),
        ("2026-11-22T10:25:49+00:00", NOON),
        ("2026-11-22T12:25:49+02:00", NOON),
        ("2026-11-22 05:25:49-05:00", NOON),
        ("2026-11-22T10:25:49.250Z", NOON.replace(microsecond=250000)),
    ],
)
def test_datetime_filter_takes_the_reference_format_and_iso_8601_in_utc(text, expected):
    ((_, cond),) = parse_list(request(("created", text)), SPEC).conditions
    assert (cond.op, cond.value) == (Op.EQUALS, expected)
    assert cond.value.utcoffset() == dt.timedelta(0)


@pytest.mark.parametrize("op", [Op.GT, Op.GTE, Op.LT, Op.LTE, Op.EQUALS, Op.NOT_EQUALS])
def test_datetime_operators_take_iso_8601(op):
    pairs = ("created", f"{op}:2026-11-22T12:25:49+02:00")
    ((_, cond),) = parse_list(request(pairs), SPEC).conditions
    assert (cond.op, cond.value) == (op, NOON)


def test_datetime_range_takes_both_forms():
    pairs = ("created", "in:2026-11-22 10:25:49,2026-11-23T10:25:49Z")
    ((_, cond),) = parse_list(request(pairs), SPEC).conditions
    assert (cond.op, cond.value) == (Op.IN, (NOON, NOON + dt.timedelta(days=1)))


@pytest.mark.parametrize("param", ["created", "count", "weight", "flag", "color"])
@pytest.mark.parametrize("value", ["", " "])
def test_blank_filter_of_a_never_blank_field_is_no_filter(param, value):
    listing = parse_list(request((param, value), ("name", "a")), SPEC)
    assert [f.name for f, _ in listing.conditions] == ["name"]


def test_blank_text_and_id_filters_are_kept():
    listing = parse_list(request(("name", ""), ("id", "")), SPEC)
    assert [(f.name, c.op) for f, c in listing.conditions] == [
        ("id", Op.EQUALS),
        ("name", Op.EQUALS),
    ]


@pytest.mark.parametrize("value", ["purple", 'oneof:["red","purple"]'])
def test_enum_value_outside_the_enum_is_a_condition_not_a_422(value):
    ((_, cond),) = parse_list(request(("color", value)), SPEC).conditions
    assert "purple" in (cond.value if isinstance(cond.value, tuple) else (cond.value,))


def test_unknown_sort_key_is_422():
    assert "valid fields" in str(failure(SPEC, ("sort_by", "password"))["msg"])


@pytest.mark.parametrize("key", ["page", "size", "sort_by", "logical_operator", "hydrate"])
def test_sorting_by_a_paging_parameter_is_422(key):
    assert "can not be sorted" in str(failure(SPEC, ("sort_by", f"desc:{key}"))["msg"])


def test_unknown_sort_prefix_falls_back_to_ascending():
    listing = parse_list(request(("sort_by", "bad:name")), SPEC)
    assert (listing.sort.name, listing.descending) == ("name", False)


def test_desc_prefix_sorts_descending():
    listing = parse_list(request(("sort_by", "desc:created")), SPEC)
    assert (listing.sort.name, listing.descending) == ("created", True)


@pytest.mark.parametrize(
    ("param", "value"),
    [("size", "0"), ("size", "10001"), ("page", "0"), ("logical_operator", "xor")],
)
def test_paging_parameters_out_of_range_are_422(param, value):
    assert failure(SPEC, (param, value))["loc"] == ["query", param]


def test_defaults_are_the_references():
    listing = parse_list(request(), SPEC)
    assert (listing.page, listing.size, listing.hydrate) == (1, 20, False)
    assert listing.logical_operator is LogicalOperator.AND
    assert (listing.sort.name, listing.descending) == ("created", False)


def test_like_wildcards_are_escaped():
    assert escape_like("50%_\\") == "50\\%\\_\\\\"


async def test_contains_treats_underscore_literally(engine):
    assert await names(engine, ("name", "contains:a_")) == ["a_b"]


async def test_text_operators_are_case_insensitive(engine):
    assert await names(engine, ("name", "startswith:RE")) == ["rex"]


async def test_equals_is_case_sensitive(engine):
    assert await names(engine, ("name", "REX")) == []


async def test_name_or_id_matches_the_related_name(engine):
    assert await names(engine, ("owner", "ann"), ("sort_by", "name")) == ["rex", "tom"]


async def test_name_or_id_matches_the_related_id(engine):
    assert await names(engine, ("owner", str(BOB)), ("sort_by", "name")) == ["a_b", "axb", "kit"]


async def test_name_or_id_takes_operators(engine):
    assert await names(engine, ("owner", "startswith:b"), ("name", "kit")) == ["kit"]


async def test_or_joins_filters(engine):
    pairs = [("name", "rex"), ("name", "kit"), ("logical_operator", "or"), ("sort_by", "name")]
    assert await names(engine, *pairs) == ["kit", "rex"]


async def test_sort_descending_with_id_tiebreak(engine):
    assert await names(engine, ("sort_by", "desc:name")) == ["tom", "rex", "kit", "axb", "a_b"]


async def test_page_and_size_slice_the_sorted_rows(engine):
    pairs = [("sort_by", "name"), ("size", "2"), ("page", "2")]
    assert await names(engine, *pairs) == ["kit", "rex"]


async def test_total_counts_every_match_not_the_page(engine):
    listing = parse_list(request(("size", "2"), ("owner", "bob")), PETS)
    async with session_scope(create_sessionmaker(engine)) as session:
        total, rows = await fetch_page(session, PETS, listing, select(pets))
    assert (total, len(rows)) == (3, 2)


def test_spec_query_model_documents_every_filter():
    model = SPEC.query_model()
    assert set(FIELDS) <= set(model.model_fields)
    assert model.model_fields["size"].metadata  # bounds are in the schema


async def _owners_named_like(_connection: object, cond: Condition) -> set[uuid.UUID]:
    # Stands in for a lookup in another service: the owners whose name matches.
    return {
        oid
        for oid, name in ((ANN, "ann"), (BOB, "bob"))
        if cond.raw in (name, f"startswith:{name[0]}")
    }


REMOTE_PETS = ListSpec(
    resource="pet",
    id_column=pets.c.id,
    fields=[
        Field(name="owner", kind=Kind.STRING, column=pets.c.owner_id, lookup=_owners_named_like)
    ],
    sort_keys=[SortKey("name", pets.c.name), SortKey("created", pets.c.name)],
)


async def remote_names(engine: AsyncEngine, *pairs: tuple[str, str]) -> list[str]:
    listing = await read_list(request(*pairs, ("sort_by", "name")), REMOTE_PETS)
    async with session_scope(create_sessionmaker(engine)) as session:
        _total, rows = await fetch_page(session, REMOTE_PETS, listing, select(pets))
    return [row.name for row in rows]


async def test_lookup_matches_names_found_elsewhere(engine):
    assert await remote_names(engine, ("owner", "ann")) == ["rex", "tom"]


async def test_lookup_condition_also_matches_the_id_here(engine):
    assert await remote_names(engine, ("owner", str(BOB))) == ["a_b", "axb", "kit"]


async def test_lookup_that_finds_nothing_matches_nothing(engine):
    assert await remote_names(engine, ("owner", "carol")) == []


BY_OWNER = (pets.c.owner_id == bindparam("scope_owner", type_=Uuid()),)
PETS_COLUMNS = select(pets)


@pytest.mark.parametrize(
    "pairs",
    [
        [],
        [("sort_by", "name")],
        [("sort_by", "desc:name")],
        [("sort_by", "name"), ("size", "1"), ("page", "2")],
        [("sort_by", "desc:name"), ("size", "1"), ("page", "2")],
        [("name", "startswith:a")],  # filtered: built per request, same parameters
    ],
)
@pytest.mark.parametrize("owner", [ANN, BOB])
async def test_prebuilt_pages_answer_as_built_ones(engine, pairs, owner):
    """A scope given as parameters (statements built once, reused across requests and
    owners) pages exactly as the same scope built with its values."""
    listing = parse_list(request(*pairs), PETS)
    async with session_scope(create_sessionmaker(engine)) as session:
        for _ in range(2):  # the second time from the statements built the first
            prebuilt = await fetch_page(
                session,
                PETS,
                listing,
                PETS_COLUMNS,
                scope=BY_OWNER,
                params={"scope_owner": owner},
                core=True,
            )
            built = await fetch_page(
                session, PETS, listing, select(pets), scope=[pets.c.owner_id == owner]
            )
            assert prebuilt[0] == built[0]
            assert [r.name for r in prebuilt[1]] == [r.name for r in built[1]]


async def test_prebuilt_page_past_the_end_is_empty(engine):
    listing = parse_list(request(("size", "2"), ("page", "3")), PETS)
    async with session_scope(create_sessionmaker(engine)) as session:
        total, rows = await fetch_page(
            session, PETS, listing, PETS_COLUMNS, scope=BY_OWNER, params={"scope_owner": ANN}
        )
    assert (total, rows) == (2, [])
