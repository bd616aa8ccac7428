"""Shapes build a model's wire dict from a row without validating: the dicts must be what
the model would have sent."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import AsyncIterator
from types import SimpleNamespace

import pytest
from pydantic import BaseModel, Field
from pydantic_core import to_json
from sqlalchemy import Column, DateTime, Integer, MetaData, Row, String, Table, Uuid
from sqlalchemy import select as sa_select
from sqlalchemy.ext.asyncio import AsyncEngine

from shared.db import create_engine
from shared.shapes import Shape, plain_rows
from shared.types import WireDatetime
from tests.support.databases import Databases


class Body(BaseModel):
    created: WireDatetime
    count: int = 0
    label: str | None = None
    tags: list[str] = Field(default_factory=list)


class Envelope(BaseModel):
    body: Body | None = None
    id: uuid.UUID
    permission_denied: bool = False
    name: str


AWARE = dt.datetime(2026, 11, 22, 10, 25, 49, 617843, tzinfo=dt.timezone(dt.timedelta(hours=2)))


def _same_as_model(model: type[BaseModel], built: dict[str, object]) -> None:
    assert to_json(built) == model.model_validate(built).model_dump_json().encode()


def test_an_object_row_fills_fields_by_name_and_defaults_the_rest():
    row = SimpleNamespace(id=uuid.uuid4(), name="a", created=AWARE, count=3)
    built = Shape(Envelope).of(row, body=Shape(Body).of(row))
    assert list(built) == ["body", "id", "permission_denied", "name"]
    assert built["permission_denied"] is False
    assert built["body"] == {
        "created": dt.datetime(2026, 11, 22, 8, 25, 49, 617843),
        "count": 3,
        "label": None,
        "tags": [],
    }
    _same_as_model(Envelope, built)


def test_a_default_factory_gives_each_dict_its_own_value():
    shape = Shape(Body)
    first = shape.of(SimpleNamespace(created=AWARE))
    second = shape.of(SimpleNamespace(created=AWARE))
    assert first["tags"] == []
    assert first["tags"] is not second["tags"]


def test_a_required_field_the_row_lacks_is_an_error_not_a_silent_null():
    with pytest.raises(KeyError, match=r"Envelope\.name"):
        Shape(Envelope).of(SimpleNamespace(id=uuid.uuid4()))


@pytest.fixture(scope="module")
async def engine(databases: Databases) -> AsyncIterator[AsyncEngine]:
    """An empty database for the tables the rows are read from."""
    async with databases.postgres(None) as url:
        engine = create_engine(url)
        yield engine
        await engine.dispose()


async def _things(
    engine: AsyncEngine, *columns: Column[object], created: dt.datetime = AWARE
) -> list[Row[object]]:
    """One row of a one-row table with ``columns`` (the first a UUID key), read back."""
    table = Table(f"things_{uuid.uuid4().hex[:8]}", MetaData(), *columns)
    values = {"id": uuid.uuid4(), "name": "n", "created": created, "count": 7, "first name": "a"}
    async with engine.begin() as conn:
        await conn.run_sync(table.metadata.create_all)
        await conn.execute(table.insert(), {c.name: values[c.name] for c in table.columns})
        rows = list((await conn.execute(sa_select(*table.columns))).all())
        await conn.run_sync(table.metadata.drop_all)
    return rows


@pytest.mark.parametrize("stored", [AWARE, AWARE.replace(tzinfo=None)])
async def test_core_rows_are_read_by_position_with_naive_utc_datetimes(
    engine: AsyncEngine, stored: dt.datetime
):
    rows = await _things(
        engine,
        Column("id", Uuid, primary_key=True),
        Column("name", String),
        Column("created", DateTime(timezone=True)),
        Column("count", Integer),
        created=stored,
    )
    body, envelope = Shape(Body), Shape(Envelope)
    for _ in range(2):  # the second time from the cached plan
        built = envelope.of(rows[0], body=body.of(rows[0], label="x"))
        assert built["id"] == rows[0].id
        body_dict = built["body"]
        assert body_dict["count"] == 7
        assert body_dict["label"] == "x"
        assert body_dict["created"].tzinfo is None
        _same_as_model(Envelope, built)


async def test_plain_rows_read_like_the_core_rows_they_come_from(engine: AsyncEngine):
    rows = await _things(
        engine,
        Column("id", Uuid, primary_key=True),
        Column("name", String),
        Column("created", DateTime(timezone=True)),
        Column("count", Integer),
    )
    (plain,) = plain_rows(rows)
    assert not isinstance(plain, Row)
    assert plain._fields == rows[0]._fields
    assert tuple(plain) == tuple(rows[0])
    assert (plain.id, plain.name, plain.count) == (rows[0].id, "n", 7)
    with pytest.raises(AttributeError):
        plain.missing  # noqa: B018 (a column it lacks is still an AttributeError)
    body, envelope = Shape(Body), Shape(Envelope)
    for row in (rows[0], plain, plain):  # the plain row's builder reads it by position
        built = envelope.of(row, body=body.of(row, label="x"))
        assert built == envelope.of(rows[0], body=body.of(rows[0], label="x"))
        _same_as_model(Envelope, built)
    assert plain_rows([]) == []


async def test_rows_whose_columns_are_not_identifiers_stay_core_rows(engine: AsyncEngine):
    rows = await _things(engine, Column("id", Uuid, primary_key=True), Column("first name", String))
    assert plain_rows(rows) is rows


class OptionalTimes(BaseModel):
    start_time: WireDatetime | None = None


def test_an_optional_wire_datetime_is_sent_naive_utc() -> None:
    built = Shape(OptionalTimes).of(SimpleNamespace(start_time=AWARE))
    assert built == {"start_time": dt.datetime(2026, 11, 22, 8, 25, 49, 617843)}
    _same_as_model(OptionalTimes, built)
    assert Shape(OptionalTimes).of(SimpleNamespace(start_time=None)) == {"start_time": None}
