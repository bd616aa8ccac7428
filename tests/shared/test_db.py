"""The engine, its SQLite pragmas, and the one-transaction-per-request helper, on a real
SQLite file and (with TEST_DATABASE_URL) a real PostgreSQL database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Column, ForeignKey, Integer, MetaData, String, Table, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from starlette.requests import Request

from shared.db import (
    _HELD,
    SQLITE_MMAP_BYTES,
    create_engine,
    create_sessionmaker,
    flush_unique,
    is_sqlite,
    ping,
    session_scope,
    start_background_checkpoints,
    transaction,
)
from shared.sqlite import WalCheckpointer
from tests.support.databases import sqlite_url

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
counters = Table(
    "scratch_counter",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("value", Integer, nullable=False),
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
    async with session_scope(sessionmaker, write=False) as session:
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


def _driver_connection(session: Any) -> Any:
    bind = session.bind
    assert isinstance(bind, AsyncConnection)  # a kept connection, not the engine
    assert bind.sync_connection is not None
    return bind.sync_connection.connection.dbapi_connection


async def test_sqlite_scopes_keep_their_connection_for_the_next_one(tmp_path: Path):
    engine = create_engine(sqlite_url(tmp_path), pool_size=2)
    sessionmaker = create_sessionmaker(engine)
    async with engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    async with session_scope(sessionmaker) as session:
        first = _driver_connection(session)
        await session.exec(parents.insert().values(id=1))
    async with session_scope(sessionmaker, write=False) as session:
        assert _driver_connection(session) is first  # the one used last
        connection = await session.connection()
        assert (await connection.scalar(select(func.count()).select_from(parents))) == 1
    # Two at once: two connections; afterwards both are kept (pool_size), no more.
    async with session_scope(sessionmaker) as one, session_scope(sessionmaker, write=False) as two:
        assert _driver_connection(one) is not _driver_connection(two)
    async with (
        session_scope(sessionmaker, write=False) as a,
        session_scope(sessionmaker, write=False) as b,
        session_scope(sessionmaker, write=False) as c,
    ):
        drivers = [_driver_connection(s) for s in (a, b, c)]
    kept = [connection for _, connection in _HELD[engine.sync_engine].connections]
    assert len(kept) == 2
    assert engine.sync_engine.pool.checkedout() == 2  # type: ignore[attr-defined]
    await engine.dispose()
    # Disposing of the engine closed the kept connections' SQLite connections.
    assert all(connection.closed for connection in kept)
    assert all(not driver._connection._running for driver in drivers)  # threads ended
    assert _HELD[engine.sync_engine].connections == []


async def test_a_scope_cancelled_while_it_waits_for_the_write_lock_leaves_nothing_open(
    tmp_path: Path,
):
    engine = create_engine(sqlite_url(tmp_path), pool_size=2)
    sessionmaker = create_sessionmaker(engine)
    async with engine.begin() as conn:
        await conn.run_sync(metadata.create_all)

    async def second_writer() -> None:
        async with session_scope(sessionmaker) as session:
            await session.exec(parents.insert().values(id=2))

    async with session_scope(sessionmaker) as holder:
        await holder.exec(parents.insert().values(id=1))
        waiting = asyncio.create_task(second_writer())
        await asyncio.sleep(0.2)  # it waits for the write lock, on its connection's thread
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    async with session_scope(sessionmaker) as session:  # the lock is free, the pool whole
        await session.exec(parents.insert().values(id=3))
    assert await count(engine) == 2
    await engine.dispose()


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


async def test_sqlite_engine_runs_in_wal_mode_with_foreign_keys_on_and_a_memory_map(tmp_path: Path):
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path}/wal.db")
    try:
        async with engine.connect() as conn:
            journal = (await conn.exec_driver_sql("PRAGMA journal_mode")).scalar_one()
            foreign_keys = (await conn.exec_driver_sql("PRAGMA foreign_keys")).scalar_one()
            busy_timeout = (await conn.exec_driver_sql("PRAGMA busy_timeout")).scalar_one()
            mmap_size = (await conn.exec_driver_sql("PRAGMA mmap_size")).scalar_one()
    finally:
        await engine.dispose()
    assert journal == "wal"
    assert foreign_keys == 1
    assert mmap_size == SQLITE_MMAP_BYTES  # reads through the OS's page cache
    # Calls run on the event loop's thread and never wait there (shared.sqlite).
    assert busy_timeout == 0


async def test_sqlite_engine_creates_the_database_folder(tmp_path: Path):
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path}/nested/deeper/service.db")
    try:
        await ping(engine)
    finally:
        await engine.dispose()
    assert (tmp_path / "nested" / "deeper" / "service.db").exists()


async def _wal_frames(path: Path) -> int:
    """Frames in the database's write-ahead log (a PASSIVE checkpoint's report)."""
    import sqlite3

    with sqlite3.connect(path, timeout=0) as conn:
        _busy, frames, _copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return int(frames)


async def test_background_checkpoints_take_over_from_the_committing_connection(tmp_path: Path):
    path = tmp_path / "checkpoints.db"
    engine = create_engine(f"sqlite+aiosqlite:///{path}", pool_size=1)
    checkpoints = start_background_checkpoints(engine, interval=0.02)
    assert checkpoints is not None
    try:
        async with engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
            automatic = (await conn.exec_driver_sql("PRAGMA wal_autocheckpoint")).scalar_one()
        # Far more than SQLite's own threshold (1,000 pages) of single-row commits.
        sessionmaker = create_sessionmaker(engine)
        for value in range(1500):
            async with session_scope(sessionmaker) as session:
                await session.exec(counters.insert().values(id=value, value=value))
        runs = checkpoints.runs
        # A checkpoint after the last write has run (a counter of another thread: polled).
        while checkpoints.runs < runs + 2:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        # The log was copied back whole, so the next writer starts it over: it stays short.
        async with session_scope(sessionmaker) as session:
            await session.exec(counters.insert().values(id=1500, value=0))
        frames = await _wal_frames(path)
    finally:
        await engine.dispose()
        checkpoints.stop()
    assert automatic == 0
    assert checkpoints.failures == 0
    assert frames < 50
    assert not checkpoints._thread.is_alive()


async def test_background_checkpoints_keep_the_log_short_under_writes_without_pause(
    tmp_path: Path,
):
    # Writes landing while every checkpoint runs: a passive checkpoint alone seldom finds
    # the whole log copied back, so the log was seldom started over and grew with the writes.
    path = tmp_path / "steady.db"
    wal = tmp_path / "steady.db-wal"
    engine = create_engine(f"sqlite+aiosqlite:///{path}", pool_size=1)
    checkpoints = start_background_checkpoints(engine, interval=0.02, restart_frames=100)
    assert checkpoints is not None
    largest = 0
    try:
        async with engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
        sessionmaker = create_sessionmaker(engine)
        for value in range(6_000):
            async with session_scope(sessionmaker) as session:
                await session.exec(counters.insert().values(id=value, value=value))
            if value % 25 == 0:
                largest = max(largest, wal.stat().st_size)
        async with engine.connect() as conn:
            rows = (await conn.execute(select(func.count()).select_from(counters))).scalar_one()
    finally:
        await engine.dispose()
        checkpoints.stop()
    assert rows == 6_000
    assert checkpoints.failures == 0
    # Every commit adds a page or more to the log; started over after ~100 of them, its
    # file never held more than a few hundred (a thousand on a machine short of CPU).
    assert checkpoints.inline_runs > 0
    assert largest < 1_000 * 4_120, (largest, checkpoints.inline_runs, checkpoints.runs)


def test_background_checkpoints_follow_a_database_that_turns_to_wal_mode(tmp_path: Path):
    # The thread's connection, opened while the file was still in rollback mode, never
    # notices the switch (its checkpoints report -1 and copy nothing): it opens another.
    import sqlite3
    import time

    path = tmp_path / "late.db"
    sqlite3.connect(path).close()  # a database in rollback-journal mode
    checkpoints = WalCheckpointer(str(path), interval=0.005).start()
    try:
        while checkpoints.runs < 3:
            time.sleep(0.005)
        writer = sqlite3.connect(path, isolation_level=None)
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("CREATE TABLE blobs (data BLOB)")
        for _ in range(100):
            writer.execute("INSERT INTO blobs VALUES (zeroblob(4000))")
        deadline = time.monotonic() + 5
        # Only a checkpoint moves the written pages from the log into the database file.
        while path.stat().st_size < 100 * 4000 and time.monotonic() < deadline:
            time.sleep(0.01)
        copied = path.stat().st_size  # before closing: the last connection's close copies
        writer.close()
    finally:
        checkpoints.stop()
    assert copied >= 100 * 4000
    assert checkpoints.failures == 0


async def test_sqlite_connections_checkpoint_themselves_without_the_thread(tmp_path: Path):
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path}/alone.db")
    try:
        async with engine.connect() as conn:
            automatic = (await conn.exec_driver_sql("PRAGMA wal_autocheckpoint")).scalar_one()
    finally:
        await engine.dispose()
    assert automatic == 1000


def test_background_checkpoints_are_for_sqlite_files_only():
    for url in ("postgresql+asyncpg://u@h/db", "sqlite+aiosqlite://"):
        engine = create_engine(url)
        assert start_background_checkpoints(engine) is None


def test_is_sqlite_tells_backends_apart():
    assert is_sqlite("sqlite+aiosqlite:///x.db")
    assert not is_sqlite("postgresql+asyncpg://u@h/db")


async def test_sqlite_write_transactions_cannot_lose_a_read_then_write_update(tmp_path: Path):
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'counter.db'}")
    async with engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
        await conn.execute(counters.insert().values(id=1, value=0))
    sessionmaker = create_sessionmaker(engine)

    async def increment() -> None:
        async with session_scope(sessionmaker, write=True) as session:
            conn = await session.connection()
            value = (await conn.execute(select(counters.c.value))).scalar_one()
            await asyncio.sleep(0.05)  # the other writer runs now, if it can
            await conn.execute(counters.update().values(value=value + 1))

    await asyncio.gather(increment(), increment())
    async with engine.connect() as conn:
        assert (await conn.execute(select(counters.c.value))).scalar_one() == 2
    await engine.dispose()


async def test_read_only_requests_do_not_take_the_sqlite_write_lock(tmp_path: Path):
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'locks.db'}")
    async with engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    sessionmaker = create_sessionmaker(engine)
    async with session_scope(sessionmaker, write=False) as reader:
        await (await reader.connection()).execute(select(func.count()).select_from(parents))
        # A writer gets through while the reader's transaction is open.
        async with session_scope(sessionmaker, write=True) as writer:
            await (await writer.connection()).execute(parents.insert().values(id=7))
    assert await count(engine) == 1
    await engine.dispose()


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
