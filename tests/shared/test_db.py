"""The engine and the one-transaction-per-request helper, on a real PostgreSQL database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import Column, ForeignKey, Integer, MetaData, String, Table, bindparam, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from starlette.requests import Request

from shared.db import (
    core_execute,
    create_engine,
    create_sessionmaker,
    flush_unique,
    ping,
    session_scope,
    transaction,
)

# A private MetaData: the throwaway tables must not join SQLModel.metadata.
metadata = MetaData()
parents = Table("scratch_parent", metadata, Column("id", Integer, primary_key=True))
children = Table(
    "scratch_child",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("parent_id", Integer, ForeignKey("scratch_parent.id"), nullable=False),
    Column("name", String(50)),
)


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url, pool_size=2)
    async with engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    yield engine
    await engine.dispose()


async def count(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(parents))).scalar_one())


async def test_session_scope_commits_when_the_block_ends(engine):
    async with session_scope(create_sessionmaker(engine)) as session:
        await session.exec(parents.insert().values(id=1))
    assert await count(engine) == 1


async def insert_twice_or_fail(engine: AsyncEngine, *, twice: bool) -> None:
    async with session_scope(create_sessionmaker(engine)) as session:
        await session.exec(parents.insert().values(id=1))
        await session.flush()
        if twice:
            await session.exec(parents.insert().values(id=1))
        raise RuntimeError("handler failed")


async def test_session_scope_rolls_back_on_exception(engine):
    with pytest.raises(RuntimeError, match="handler failed"):
        await insert_twice_or_fail(engine, twice=False)
    assert await count(engine) == 0


async def test_session_scope_rolls_back_everything_when_a_later_statement_fails(engine):
    with pytest.raises(IntegrityError):
        await insert_twice_or_fail(engine, twice=True)
    assert await count(engine) == 0


async def test_orm_changes_in_a_scope_are_flushed_and_committed_with_it(engine):
    sessionmaker = create_sessionmaker(engine)
    async with session_scope(sessionmaker) as session:
        await session.exec(parents.insert().values(id=1))
        session.add(Tag(id=1, parent_id=1, name="pending at the end"))  # never flushed here
    async with session_scope(sessionmaker) as session:
        tag = await session.get(Tag, 1)
        assert tag is not None
        assert tag.name == "pending at the end"


async def insert_with_an_orphan_left_pending(sessionmaker: Any) -> None:
    async with session_scope(sessionmaker) as session:
        await session.exec(parents.insert().values(id=1))
        session.add(Tag(id=1, parent_id=99, name="orphan"))  # flushed at the end: fails


async def test_a_failing_flush_at_the_end_rolls_everything_back_and_the_next_scope_works(
    engine,
):
    sessionmaker = create_sessionmaker(engine)
    with pytest.raises(IntegrityError):
        await insert_with_an_orphan_left_pending(sessionmaker)
    assert await count(engine) == 0
    async with session_scope(sessionmaker) as session:
        await session.exec(parents.insert().values(id=2))
    assert await count(engine) == 1


async def test_foreign_keys_are_enforced(engine):
    with pytest.raises(IntegrityError):
        async with session_scope(create_sessionmaker(engine)) as session:
            await session.exec(children.insert().values(id=1, parent_id=999, name="orphan"))


async def test_transaction_uses_the_request_state_sessionmaker(engine):
    scope = {"type": "http", "state": {"sessionmaker": create_sessionmaker(engine)}}
    async with transaction(Request(scope)) as session:
        await session.exec(parents.insert().values(id=7))
    assert await count(engine) == 1


async def test_ping_succeeds_on_a_live_database(engine):
    await ping(engine)


async def test_core_execute_flushes_pending_orm_changes_into_its_transaction(engine):
    sessionmaker = create_sessionmaker(engine)
    tag_named = select(Tag.id).where(Tag.name == bindparam("name"))
    found: list[Any] = []

    async def find_then_fail() -> None:
        async with session_scope(sessionmaker) as session:
            await session.exec(parents.insert().values(id=1))
            session.add(Tag(id=1, parent_id=1, name="pending"))
            found.extend(await core_execute(session, tag_named, {"name": "pending"}))
            raise RuntimeError("handler failed")

    with pytest.raises(RuntimeError, match="handler failed"):
        await find_then_fail()
    assert found == [(1,)]
    assert await count(engine) == 0  # rolled back with the session


class NameTaken(Exception):
    pass


class Base(DeclarativeBase):
    metadata = metadata


class Tag(Base):
    __tablename__ = "scratch_tag"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    parent_id: Mapped[int] = mapped_column(ForeignKey("scratch_parent.id"))
    name: Mapped[str] = mapped_column(String(50), unique=True)


async def add_and_flush(engine: AsyncEngine, tag: Tag) -> None:
    async with session_scope(create_sessionmaker(engine)) as session:
        session.add(tag)
        await flush_unique(session, NameTaken())


async def test_flush_unique_turns_a_unique_violation_into_the_given_conflict(engine):
    async with session_scope(create_sessionmaker(engine)) as session:
        await session.exec(parents.insert().values(id=1))
        session.add(Tag(id=1, parent_id=1, name="a"))
    with pytest.raises(NameTaken):
        await add_and_flush(engine, Tag(id=2, parent_id=1, name="a"))


async def test_flush_unique_lets_other_integrity_errors_through(engine):
    with pytest.raises(IntegrityError):
        await add_and_flush(engine, Tag(id=1, parent_id=99, name="a"))
