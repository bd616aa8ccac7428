"""SQLite calls on the event loop's thread: a locked database is waited for elsewhere."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from shared.db import create_engine, create_sessionmaker, session_scope
from shared.sqlite import InlineConnection, inline_connect


async def _setup(path: Path) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    async with engine.begin() as conn:
        await conn.execute(text("CREATE TABLE t (n INTEGER)"))
    await engine.dispose()


async def _open(path: Path, wait_ms: int = 10_000) -> InlineConnection:
    conn = await inline_connect(str(path), wait_ms=wait_ms)
    assert isinstance(conn, InlineConnection)
    return conn


async def test_calls_run_on_the_event_loops_thread(tmp_path: Path):
    seen: list[int] = []
    conn = await _open(tmp_path / "a.db")
    try:

        def whoami() -> int:
            seen.append(threading.get_ident())
            return 1

        conn._conn.create_function("whoami", 0, whoami)
        cursor = await conn.execute("SELECT whoami()")
        assert await cursor.fetchone() == (1,)
    finally:
        await conn.close()
    assert seen == [threading.get_ident()]
    assert conn.waited == 0


async def test_a_writer_waits_for_the_lock_without_blocking_the_loop(tmp_path: Path):
    path = tmp_path / "busy.db"
    await _setup(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    sessionmaker = create_sessionmaker(engine)

    async def write() -> None:
        async with session_scope(sessionmaker, write=True) as session:
            await session.exec(text("INSERT INTO t (n) VALUES (1)"))  # type: ignore[call-overload]

    try:
        writer = asyncio.create_task(write())
        ticks = 0
        for _ in range(20):  # the loop keeps running while the writer waits
            await asyncio.sleep(0.01)
            ticks += 1
        assert not writer.done()
        holder.execute("INSERT INTO t (n) VALUES (0)")
        holder.execute("COMMIT")
        await asyncio.wait_for(writer, 5)
        assert ticks == 20
        rows = holder.execute("SELECT n FROM t ORDER BY n").fetchall()
        assert rows == [(0,), (1,)]
        # The writer's connection (kept for the next transaction): it waited, once.
        async with session_scope(sessionmaker, write=False) as session:
            conn = await session.connection()
            raw = await conn.get_raw_connection()
            inline = raw.driver_connection
            assert isinstance(inline, InlineConnection)
            assert inline.waited >= 1
            busy = (await conn.exec_driver_sql("PRAGMA busy_timeout")).scalar_one()
            assert busy == 0  # restored after the wait
    finally:
        holder.close()
        await engine.dispose()


async def test_a_writer_gives_up_after_the_busy_timeout(tmp_path: Path):
    path = tmp_path / "stuck.db"
    await _setup(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    conn = await _open(path, wait_ms=200)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            await conn.execute("BEGIN IMMEDIATE")
        assert conn.waited == 1
    finally:
        holder.close()
        await conn.close()


async def test_a_call_left_waiting_on_the_thread_is_never_overlapped(tmp_path: Path):
    """A caller cancelled while its call waits on the thread: later calls (closing the
    connection too) queue behind that call instead of racing it from the loop's thread."""
    path = tmp_path / "cancelled.db"
    await _setup(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    conn = await _open(path, wait_ms=400)
    try:
        waiting = asyncio.create_task(conn.execute("BEGIN IMMEDIATE"))
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert conn._on_thread == 1  # still waiting for the lock over there
        started = time.monotonic()
        cursor = await conn.execute("SELECT count(*) FROM t")  # queued behind it
        assert await cursor.fetchone() == (0,)
        assert time.monotonic() - started > 0.2
    finally:
        holder.close()
        await conn.close()
    assert conn._on_thread == 0
