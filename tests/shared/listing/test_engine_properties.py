"""The engine agrees with a plain-Python evaluation of the same filters (hypothesis)."""

from __future__ import annotations

import datetime as dt
import random
import re
import uuid
from collections.abc import AsyncIterator
from enum import StrEnum
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Boolean, Column, Float, Integer, MetaData, String, Table, Uuid, select, sql
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.sql.sqltypes import UTCDateTime

from shared.db import create_engine, create_sessionmaker, session_scope
from shared.listing import (
    Condition,
    Field,
    Kind,
    Listing,
    ListSpec,
    LogicalOperator,
    Op,
    SortKey,
    column_field,
    fetch_page,
    parse,
)
from shared.listing.expressions import ALLOWED
from tests.support.databases import Databases

metadata = MetaData()
items = Table(
    "listing_items",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("name", String(50), nullable=True),
    Column("count", Integer, nullable=True),
    Column("weight", Float, nullable=True),
    Column("flag", Boolean, nullable=True),
    Column("created", UTCDateTime(), nullable=True),
    Column("color", String(10), nullable=True),
)


class Color(StrEnum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


FIELDS = {
    "id": column_field("id", items.c.id, Kind.UUID),
    "name": column_field("name", items.c.name, Kind.STRING),
    "count": column_field("count", items.c.count, Kind.INT),
    "weight": column_field("weight", items.c.weight, Kind.FLOAT),
    "flag": column_field("flag", items.c.flag, Kind.BOOL),
    "created": column_field("created", items.c.created, Kind.DATETIME),
    "color": column_field("color", items.c.color, Kind.ENUM, enum=Color),
}
SPEC = ListSpec(
    resource="listing_item",
    id_column=items.c.id,
    fields=list(FIELDS.values()),
    sort_keys=[SortKey("created", items.c.created), SortKey("name", items.c.name)],
)

# Letters and LIKE's special characters, or plain numbers (text read as a number when it
# is one, else as 0).
WORDS = ["alpha", "Beta", "a%b", "a_b", "back\\slash", "ALPHA", "gamma ray", "", "7", "42", "100"]
BASE = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def make_rows(count: int = 80) -> list[dict[str, Any]]:
    rng = random.Random(1234)
    rows = []
    for i in range(count):
        rows.append(
            {
                "id": uuid.UUID(int=rng.getrandbits(128)),
                "name": rng.choice([*WORDS, None]),
                "count": rng.choice([None, -3, 0, 1, 2, 5, 42]),
                "weight": rng.choice([None, -1.5, 0.0, 0.25, 2.0, 3600.0]),
                "flag": rng.choice([None, True, False]),
                "created": None
                if i % 11 == 0
                else BASE + dt.timedelta(hours=rng.randrange(0, 200)),
                "color": rng.choice([None, "red", "green", "blue"]),
            }
        )
    return rows


ROWS = make_rows()


@pytest.fixture(scope="module")
async def loaded(databases: Databases) -> AsyncIterator[AsyncEngine]:
    async with databases.postgres(None) as url:
        engine = create_engine(url)
        async with engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
            await conn.execute(items.insert(), ROWS)
        yield engine
        await engine.dispose()


# --- plain-Python semantics ------------------------------------------------------------


def _numeric(text: str) -> float:
    return float(text) if re.fullmatch(r"\s*[-+]?[0-9]+(\.[0-9]+)?\s*", text) else 0.0


def _text(value: Any, kind: Kind) -> str:
    return value.hex if kind is Kind.UUID else str(value)


def holds(value: Any, kind: Kind, cond: Condition) -> bool:
    op, target = cond.op, cond.value
    if op is Op.IS_NULL:
        return value is None
    if op is Op.IS_NOT_NULL:
        return value is not None
    if kind is Kind.UUID and op in (Op.EQUALS, Op.NOT_EQUALS) and target is None:
        return op is Op.NOT_EQUALS
    if op is Op.NOT_EQUALS:
        return value is None or value != target
    if op is Op.NOT_ONEOF:
        return value is None or value not in target
    if op is Op.NOT_CONTAINS:
        return value is None or target.lower() not in _text(value, kind).lower()
    if value is None:
        return False
    if op is Op.EQUALS:
        return bool(value == target)
    if op is Op.ONEOF:
        return value in target
    text = _text(value, kind).lower() if kind in (Kind.STRING, Kind.UUID, Kind.ENUM) else ""
    if op is Op.CONTAINS:
        return target.lower() in text
    if op is Op.STARTSWITH:
        return text.startswith(target.lower())
    if op is Op.ENDSWITH:
        return text.endswith(target.lower())
    if op is Op.IN:
        return bool(target[0] <= value <= target[1])
    left = _numeric(value) if kind is Kind.STRING else (value.hex if kind is Kind.UUID else value)
    outcome: bool = {
        Op.GT: left > target,
        Op.GTE: left >= target,
        Op.LT: left < target,
        Op.LTE: left <= target,
    }[op]
    return outcome


# --- strategies ----------------------------------------------------------------------

# The reference's format, and ISO 8601 in UTC or at another offset (the same instant).
DATETIME_FORMS = [
    lambda t: t.strftime("%Y-%m-%d %H:%M:%S"),
    lambda t: t.isoformat().replace("+00:00", "Z"),
    lambda t: t.astimezone(dt.timezone(dt.timedelta(hours=-5, minutes=-30))).isoformat(),
]
DATETIMES = st.builds(
    lambda h, form: form(BASE + dt.timedelta(hours=h)),
    st.integers(-5, 205),
    st.sampled_from(DATETIME_FORMS),
)
VALUES: dict[Kind, st.SearchStrategy[str]] = {
    Kind.STRING: st.one_of(st.sampled_from(WORDS), st.text("ab%_\\LP", max_size=3)),
    Kind.UUID: st.one_of(
        st.sampled_from([r["id"] for r in ROWS]).map(str),
        st.sampled_from([r["id"] for r in ROWS]).map(lambda u: u.hex[3:9]),
        st.just("not-a-uuid"),
    ),
    Kind.INT: st.integers(-5, 50).map(str),
    Kind.FLOAT: st.one_of(
        st.sampled_from(["0.25", "-1.5", "3.6e3", "2", "1e999", "-inf"]),
        st.floats(-5, 4000, allow_nan=False).map(repr),
    ),
    Kind.BOOL: st.sampled_from(["true", "false", "1", "0", "True"]),
    Kind.DATETIME: DATETIMES,
    Kind.ENUM: st.sampled_from(["red", "green", "blue", "purple"]),
}


@st.composite
def expressions(draw: st.DrawFn) -> tuple[str, str]:
    name = draw(st.sampled_from(sorted(FIELDS)))
    kind = FIELDS[name].kind
    op = draw(st.sampled_from(sorted(ALLOWED[kind])))
    if kind is Kind.STRING and op in (Op.GT, Op.GTE, Op.LT, Op.LTE):
        return name, f"{op}:{draw(st.integers(-5, 120))}"
    if kind is Kind.UUID and op in (Op.GT, Op.GTE, Op.LT, Op.LTE):
        return name, f"{op}:{draw(st.sampled_from([r['id'] for r in ROWS])).hex[:6]}"
    if op in (Op.IS_NULL, Op.IS_NOT_NULL):
        return name, f"{op}:"
    if op in (Op.ONEOF, Op.NOT_ONEOF):
        strategy = VALUES[kind]
        if kind is Kind.UUID:
            strategy = st.sampled_from([str(r["id"]) for r in ROWS])
        values = draw(st.lists(strategy, max_size=3))
        quoted = ",".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)
        return name, f"{op}:[{quoted}]"
    if op is Op.IN:
        return name, f"in:{draw(DATETIMES)},{draw(DATETIMES)}"
    return name, f"{op}:{draw(VALUES[kind])}"


KEPT = select(items)
KEPT_SCOPE = (sql.or_(items.c.count.is_(None), items.c.count > sql.bindparam("low")),)


def _listing(conditions: list[tuple[Field, Condition]], operator: LogicalOperator) -> Listing:
    return Listing(
        hydrate=False,
        page=1,
        size=10000,
        logical_operator=operator,
        conditions=conditions,
        sort=SPEC.sort_keys[0],
        descending=False,
    )


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    exprs=st.lists(expressions(), min_size=1, max_size=3),
    operator=st.sampled_from(list(LogicalOperator)),
)
async def test_engine_matches_python_evaluation(loaded: AsyncEngine, exprs, operator):
    """Both ways a filtered list runs: statements built for this request, and statements
    built once per filter form (a statement and scope of the caller's own, kept, with
    ``params``), reused by later examples of the same forms with other values."""
    conditions = [(FIELDS[n], parse(raw, FIELDS[n].kind)) for n, raw in exprs]
    listing = _listing(conditions, operator)
    async with session_scope(create_sessionmaker(loaded)) as session:
        total, rows = await fetch_page(session, SPEC, listing, select(items))
        kept = await fetch_page(
            session, SPEC, listing, KEPT, scope=KEPT_SCOPE, params={"low": -(10**9)}
        )
    combine = any if operator is LogicalOperator.OR else all
    expected = {
        row["id"] for row in ROWS if combine(holds(row[f.name], f.kind, c) for f, c in conditions)
    }
    assert {row.id for row in rows} == expected
    assert total == len(expected)
    # The kept scope (any count, or none) holds every row.
    assert (kept[0], {row.id for row in kept[1]}) == (total, expected)
