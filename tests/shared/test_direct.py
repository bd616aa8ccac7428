"""Statements run on the SQLite driver directly (shared.direct) answer exactly as SQLAlchemy
does: same rows, same Python values, same errors, same transaction; what it does not take
goes through SQLAlchemy. Checked on a real SQLite file (the direct path is SQLite's only;
on PostgreSQL the same calls go through SQLAlchemy, and must answer the same)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import pydantic_core
import pytest
from pydantic import TypeAdapter
from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Integer,
    MetaData,
    String,
    Table,
    Uuid,
    bindparam,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.sql.sqltypes import UTCDateTime

from shared import direct
from shared.db import core_execute, create_engine, create_sessionmaker, flush_unique, session_scope
from shared.types import WireDatetime, wire_timestamp

metadata = MetaData()
things = Table(
    "direct_thing",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("name", String(50), nullable=False, unique=True),
    Column("size", Integer),
    Column("done", Boolean, nullable=False, default=False),
    Column("at", DateTime(timezone=True)),
    Column("extra", JSON),
)
AT = dt.datetime(2026, 11, 22, 10, 25, 49, 617843, tzinfo=dt.UTC)


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url, pool_size=2)
    async with engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    yield engine
    async with engine.begin() as conn:
        await conn.run_sync(metadata.drop_all)
    await engine.dispose()


@pytest.fixture
def sessions(engine: AsyncEngine) -> Any:
    return create_sessionmaker(engine)


@contextmanager
def statements(engine: AsyncEngine) -> Iterator[list[tuple[str, Any]]]:
    seen: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, params: Any, *_args: Any) -> None:
        seen.append((statement, params))

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)


@contextmanager
def direct_path(enabled: bool) -> Iterator[None]:
    before = direct.ENABLED
    direct.ENABLED = enabled
    try:
        yield
    finally:
        direct.ENABLED = before


def row(index: int, **values: Any) -> dict[str, Any]:
    return {
        "id": uuid.UUID(int=index + 1),
        "name": f"thing-{index}",
        "size": index * 10 if index % 3 else None,
        "done": index % 2 == 0,
        "at": AT + dt.timedelta(seconds=index) if index % 4 else None,
        "extra": {"index": index, "tags": ["a", "b"]} if index % 2 else None,
        **values,
    }


async def load(sessions: Any, count: int = 12) -> None:
    async with session_scope(sessions) as session:
        for index in range(count):
            await core_execute(session, insert(things), row(index))


QUERIES = {
    "all": (select(things).order_by(things.c.name), None),
    "by id parameter": (
        select(things).where(things.c.id == bindparam("id", type_=things.c.id.type)),
        {"id": uuid.UUID(int=4)},
    ),
    "labels and functions": (
        select(
            things.c.id.label("thing_id"),
            func.upper(things.c.name).label("upper"),
            func.coalesce(things.c.size, -1).label("size_or"),
        ).order_by(things.c.id),
        None,
    ),
    "expanding in": (
        select(things.c.name, things.c.at).where(things.c.id.in_(bindparam("ids", expanding=True))),
        {"ids": [uuid.UUID(int=2), uuid.UUID(int=5), uuid.UUID(int=99)]},
    ),
    "literal in": (select(things.c.id).where(things.c.name.in_(["thing-1", "thing-7"])), None),
    "empty in": (select(things.c.id).where(things.c.id.in_([])), None),
    "count": (select(func.count()).select_from(things).where(things.c.done.is_(True)), None),
    "limit offset": (select(things.c.name).order_by(things.c.name).offset(3).limit(4), None),
    "datetime compare": (select(things.c.name).where(things.c.at > AT), None),
}


@pytest.mark.parametrize("name", list(QUERIES))
async def test_a_select_reads_the_same_rows_and_values_as_sqlalchemy(sessions, name):
    await load(sessions)
    statement, params = QUERIES[name]
    answers = []
    for enabled in (True, False):
        with direct_path(enabled):
            async with session_scope(sessions, write=False) as session:
                result = await core_execute(session, statement, params)
                rows = result.all()
        answers.append([(tuple(r._fields), tuple(r), [type(v) for v in r]) for r in rows])
    assert answers[0] == answers[1]
    assert answers[0] or name in ("empty in",)


async def test_rows_answer_by_name_and_by_position(sessions):
    await load(sessions, 3)
    async with session_scope(sessions, write=False) as session:
        result = await core_execute(session, select(things).where(things.c.name == "thing-1"))
        found = result.first()
    assert found is not None
    assert found.id == uuid.UUID(int=2)
    assert tuple(found)[1] == "thing-1"
    assert found._mapping["extra"] == {"index": 1, "tags": ["a", "b"]}
    # Plain DateTime: SQLite keeps no offset (SQLModel's columns add UTC back).
    assert found.at.replace(tzinfo=dt.UTC) == AT + dt.timedelta(seconds=1)
    assert isinstance(found.id, uuid.UUID)
    assert hash(found.id) == hash(uuid.UUID(int=2))


async def test_an_insert_is_part_of_the_transaction(sessions):
    counted: list[int] = []

    async def insert_then_fail() -> None:
        async with session_scope(sessions) as session:
            await core_execute(session, insert(things), row(1))
            counting = select(func.count()).select_from(things)
            counted.append((await core_execute(session, counting)).scalar_one())
            raise RuntimeError("roll back")

    with pytest.raises(RuntimeError, match="roll back"):
        await insert_then_fail()
    assert counted == [1]
    async with session_scope(sessions, write=False) as session:
        after = (await core_execute(session, select(func.count()).select_from(things))).scalar_one()
    assert after == 0


async def test_a_unique_violation_is_sqlalchemys_integrity_error(sessions):
    await load(sessions, 2)
    with pytest.raises(IntegrityError):
        async with session_scope(sessions) as session:
            await core_execute(session, insert(things), row(5, name="thing-1"))
    conflict = LookupError("taken")
    with pytest.raises(LookupError):
        async with session_scope(sessions) as session:
            await flush_unique(session, conflict, insert(things), row(6, name="thing-0"))


async def test_listeners_see_the_statements_it_runs(engine, sessions):
    await load(sessions, 3)
    with statements(engine) as seen:
        async with session_scope(sessions, write=False) as session:
            query = select(things.c.name).where(things.c.id.in_([uuid.UUID(int=1)]))
            assert (await core_execute(session, query)).scalars().all() == ["thing-0"]
    (sql, params) = next((s, p) for s, p in seen if "direct_thing" in s)
    assert "IN (?)" in sql or "IN (" in sql
    assert uuid.UUID(int=1).hex in str(params).replace("-", "")


async def test_what_it_does_not_take_goes_through_sqlalchemy(sessions):
    await load(sessions, 3)
    async with session_scope(sessions) as session:
        await core_execute(session, update(things).where(things.c.name == "thing-1").values(size=5))
        # Two result columns of one name: SQLAlchemy's own result handles the ambiguity.
        twice = select(things.c.name, things.c.name.label("name")).where(things.c.size == 5)
        rows = (await core_execute(session, twice)).all()
        # An INSERT leaving a default to compute.
        await core_execute(session, insert(things), {"id": uuid.UUID(int=50), "name": "defaulted"})
        done = (
            await core_execute(session, select(things.c.done).where(things.c.name == "defaulted"))
        ).scalar_one()
    assert [tuple(r) for r in rows] == [("thing-1", "thing-1")]
    assert done is False


def test_stored_uuids_read_back_as_uuid_does():
    value = uuid.uuid4()
    made = direct._hex_uuid(value.hex)
    assert made == value
    assert str(made) == str(value)
    assert hash(made) == hash(value)
    assert made.is_safe is uuid.UUID(value.hex).is_safe
    assert direct._hex_uuid(None) is None
    assert direct._hex_uuid(str(value)) == value  # another spelling: parsed as uuid.UUID does
    with pytest.raises(ValueError, match="invalid literal"):
        direct._hex_uuid("g" * 32)


PREPARED_QUERIES: dict[str, tuple[Any, list[dict[str, Any]]]] = {
    "parameters beside values of its own": (
        select(things.c.name, things.c.size)
        .where(things.c.size > bindparam("least"), things.c.done.is_(False))
        .where(things.c.name != "thing-5")
        .order_by(things.c.name)
        .limit(bindparam("size")),
        [{"least": 0, "size": 3}, {"least": 40, "size": 10}, {"least": 0, "size": 1}],
    ),
    "a value rendered into the SQL": (
        select(func.aggregate_strings(things.c.name, ";")).where(
            things.c.size >= bindparam("least")
        ),
        [{"least": 0}, {"least": 50}],
    ),
    "an expanding parameter": (
        select(things.c.name)
        .where(things.c.id.in_(bindparam("ids", expanding=True)))
        .order_by(things.c.name),
        [
            {"ids": [uuid.UUID(int=2)]},
            {"ids": [uuid.UUID(int=3), uuid.UUID(int=5)]},
            {"ids": [uuid.UUID(int=8), uuid.UUID(int=1)]},  # the same SQL, other values
            {"ids": [uuid.UUID(int=4)]},
        ],
    ),
    "its own list beside an expanding parameter": (
        select(things.c.name)
        .where(
            things.c.name.in_(["thing-1", "thing-2", "thing-3"]),
            things.c.id.not_in(bindparam("ids", expanding=True)),
        )
        .order_by(things.c.name),
        [{"ids": [uuid.UUID(int=2)]}, {"ids": [uuid.UUID(int=4), uuid.UUID(int=9)]}],
    ),
    "typed parameters": (
        select(things.c.name)
        .where(
            things.c.at > bindparam("after", type_=things.c.at.type),
            things.c.id != bindparam("not_id", type_=things.c.id.type),
        )
        .order_by(things.c.name),
        [
            {"after": AT, "not_id": uuid.UUID(int=6)},
            {"after": AT + dt.timedelta(seconds=5), "not_id": uuid.UUID(int=11)},
        ],
    ),
}


@pytest.mark.parametrize("name", list(PREPARED_QUERIES))
async def test_a_prepared_statement_answers_as_sqlalchemy_at_every_run(engine, sessions, name):
    await load(sessions)
    statement, runs = PREPARED_QUERIES[name]
    prepared = direct.prepared(statement)
    assert prepared is statement
    for params in runs:
        answers = []
        for enabled in (True, True, False):  # twice prepared (the second from what was kept)
            with direct_path(enabled):
                async with session_scope(sessions, write=False) as session:
                    rows = (await core_execute(session, statement, dict(params))).all()
            answers.append([(tuple(r._fields), tuple(r)) for r in rows])
        assert answers[0] == answers[1] == answers[2]
        assert answers[0]
    if engine.dialect.name == "sqlite":
        # What the runs after the first read from: one per expanded list's length.
        kept = direct._PREPARED[id(statement)].bound
        assert all(kept.values())
        assert len(kept) == len(
            {
                tuple(len(v) if isinstance(v, list) else 0 for v in params.values())
                for params in runs
            }
        )


async def test_a_prepared_insert_takes_each_set_of_columns_it_is_given(sessions):
    statement = direct.prepared(insert(things))
    async with session_scope(sessions) as session:
        await core_execute(session, statement, row(0))
        await core_execute(session, statement, {"id": uuid.UUID(int=50), "name": "few"})
        await core_execute(session, statement, row(1))
    async with session_scope(sessions, write=False) as session:
        query = select(things.c.name, things.c.size, things.c.done).order_by(things.c.name)
        found = [tuple(r) for r in (await core_execute(session, query)).all()]
    assert found == [("few", None, False), ("thing-0", None, True), ("thing-1", 10, False)]


stamps = Table(
    "direct_stamp", metadata, Column("id", Integer, primary_key=True), Column("at", UTCDateTime)
)
STAMPS = [
    dt.datetime(2026, 11, 22, 10, 25, 49, 617843, tzinfo=dt.UTC),
    dt.datetime(2026, 11, 22, 10, 25, 49, tzinfo=dt.UTC),  # no fraction on the wire
    dt.datetime(2026, 11, 22, 10, 25, 49, 5, tzinfo=dt.UTC),
    dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    dt.datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC),
]


@pytest.mark.parametrize("enabled", [True, False])
async def test_a_wire_timestamp_reads_as_the_response_would_send_the_datetime(sessions, enabled):
    async with session_scope(sessions) as session:
        for index, at in enumerate([*STAMPS, None]):
            await core_execute(session, insert(stamps), {"id": index, "at": at})
    query = select(wire_timestamp(stamps.c.at, "at")).order_by(stamps.c.id)
    with direct_path(enabled):
        async with session_scope(sessions, write=False) as session:
            read = (await core_execute(session, query)).scalars().all()
    wire = TypeAdapter(WireDatetime | None)
    assert [pydantic_core.to_json(value) for value in read] == [
        wire.dump_json(wire.validate_python(at)) for at in [*STAMPS, None]
    ]
