"""Async SQLModel engine, sessions and the one-transaction-per-request helper.

SQLite (the default) runs in WAL mode with foreign keys on; PostgreSQL is chosen by URL.
Handlers open exactly one transaction with :func:`transaction`, which commits when the
block ends (before the response is rendered) and rolls back on any exception. Services
``flush()`` and never ``commit()``.
"""

from __future__ import annotations

import datetime as dt
import uuid
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from typing import Any, TypeVar

from sqlalchemy import Result, event, text
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool
from sqlalchemy.sql import Executable
from sqlmodel import SQLModel, select
from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import HTTPConnection

from shared import direct
from shared.greenlets import run_sync
from shared.sqlite import RESTART_FRAMES, WalCheckpointer, inline_connect

SessionMaker = async_sessionmaker[AsyncSession]
BUSY_TIMEOUT_S = 10.0
"""How long a SQLite writer waits for the write lock before failing."""
Named = TypeVar("Named", bound=SQLModel)


def utcnow() -> dt.datetime:
    """Aware UTC, as SQLModel's datetime columns store it (see :mod:`shared.types` for the
    naive wire form)."""
    return dt.datetime.now(dt.UTC)


def new_id() -> uuid.UUID:
    return uuid.uuid4()


# Execution option naming how a SQLite transaction begins: "DEFERRED" (readers) or
# "IMMEDIATE" (takes the write lock up front, so a read-then-write cannot lose an update).
SQLITE_BEGIN = "sqlite_begin"
READ_ONLY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


SQLITE_MMAP_BYTES = 256 * 1024 * 1024
"""How much of a SQLite file its connections read through a memory map rather than
copying each page in with a system call into their own page cache (2 MiB by default,
per connection: a list reading a page of rows scattered over a large table missed it
on most of them, about twice the cost of the query's SQL). The map is the operating
system's page cache, shared by every connection and process."""


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # The sqlite3 driver would open transactions only at the first write, leaving earlier
    # reads outside them; we emit BEGIN ourselves (SQLAlchemy's documented recipe).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES:d}")
    cursor.close()


def _sqlite_begin(connection: Any) -> None:
    mode = connection.get_execution_options().get(SQLITE_BEGIN, "DEFERRED")
    if mode not in ("DEFERRED", "IMMEDIATE", "EXCLUSIVE"):
        raise ValueError(f"unknown SQLite begin mode {mode!r}")
    if not direct.begin(connection, f"BEGIN {mode}"):
        connection.exec_driver_sql(f"BEGIN {mode}")


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def create_engine(url: str, *, pool_size: int = 10, echo: bool = False) -> AsyncEngine:
    """Create the service's engine; SQLite files get their folder and WAL pragmas."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            from pathlib import Path

            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        if parsed.database in (None, "", ":memory:"):
            engine = create_async_engine(
                url, echo=echo, poolclass=NullPool, connect_args={"timeout": BUSY_TIMEOUT_S}
            )
        else:
            # Pooled: opening a SQLite connection (a thread, the file, the pragmas) costs
            # more than most queries. Writers still take turns on the database's lock.
            # Calls run on the event loop's thread; one that finds the database locked
            # waits on the connection's own thread (shared.sqlite).
            database = parsed.database
            engine = create_async_engine(
                url,
                echo=echo,
                pool_size=pool_size,
                max_overflow=pool_size,
                pool_pre_ping=False,
                # The connection used last goes out next: its page cache is the one that
                # saw the latest writes (a connection reads back the pages others changed).
                pool_use_lifo=True,
                async_creator=lambda: inline_connect(database, wait_ms=int(BUSY_TIMEOUT_S * 1000)),
            )
            _hold_connections(engine, pool_size)
        event.listen(engine.sync_engine, "connect", _sqlite_connect)
        event.listen(engine.sync_engine, "begin", _sqlite_begin)
        return engine
    return create_async_engine(
        url,
        echo=echo,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
    )


WAL_SIZE_LIMIT = 16 * 1024 * 1024
"""Bytes a WAL file is cut back to when a writer starts the log over (SQLite leaves it at
its largest size otherwise)."""


def _no_autocheckpoint(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA wal_autocheckpoint=0")
    cursor.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT:d}")
    cursor.close()


def start_background_checkpoints(
    engine: AsyncEngine, *, interval: float = 0.2, restart_frames: int = RESTART_FRAMES
) -> WalCheckpointer | None:
    """On a SQLite file: WAL checkpoints on a thread of their own from now on, instead of
    inside the commit that crosses SQLite's threshold (see
    :class:`~shared.sqlite.WalCheckpointer`); the engine's connections opened from now
    on leave them to it, and when it finds the log long, the next transaction to begin
    finishes its copying first (:meth:`~shared.sqlite.WalCheckpointer.checkpoint_inline`).
    ``None`` (nothing to do) on other databases. Call
    :meth:`~shared.sqlite.WalCheckpointer.stop` when done with the engine."""
    url = engine.url
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    event.listen(engine.sync_engine, "connect", _no_autocheckpoint)
    checkpointer = WalCheckpointer(url.database, interval=interval, restart_frames=restart_frames)

    def finish_copying(connection: Any) -> None:
        if checkpointer.long_log:
            raw = direct.inline_sqlite(connection)
            if raw is not None:
                checkpointer.checkpoint_inline(raw)

    # Before the transaction's BEGIN: listeners run in the order they were added.
    event.remove(engine.sync_engine, "begin", _sqlite_begin)
    event.listen(engine.sync_engine, "begin", finish_copying)
    event.listen(engine.sync_engine, "begin", _sqlite_begin)
    return checkpointer.start()


def create_sessionmaker(engine: AsyncEngine) -> SessionMaker:
    return async_sessionmaker(engine, class_=AsyncSession, expire_on_commit=False)


_IMMEDIATE = {SQLITE_BEGIN: "IMMEDIATE"}


def _end(session: Session, *, commit: bool) -> None:
    """Commit (or roll back) ``session``'s transaction, then close it whatever happens."""
    try:
        if commit:
            session.commit()
        else:
            session.rollback()
    finally:
        session.close()


class _Held:
    """Connections of a SQLite engine kept open between transactions (see
    :func:`session_scope`), the one used last handed out first; at most ``limit``."""

    __slots__ = ("connections", "limit")

    def __init__(self, limit: int) -> None:
        self.connections: list[tuple[AsyncConnection, Connection]] = []
        self.limit = limit

    def close_all(self, _engine: Engine) -> None:
        """When the engine is disposed (in its greenlet): the engine's pool no longer
        knows these, so their SQLite connections are closed here."""
        connections, self.connections = self.connections, []
        for _, connection in connections:
            connection.invalidate()  # closes the driver's connection
            connection.close()

    async def begin(self, engine: AsyncEngine, mode: str) -> tuple[AsyncConnection, Connection]:
        kept = self.connections.pop() if self.connections else None
        sync = await run_sync(_begin, engine.sync_engine, kept[1] if kept else None, mode)
        return (kept[0] if kept else AsyncConnection(engine, sync)), sync

    async def end(
        self, session: AsyncSession, connection: AsyncConnection, sync: Connection, commit: bool
    ) -> None:
        try:
            await run_sync(_finish, session.sync_session, sync, commit)
        finally:
            reusable = not (sync.closed or sync.invalidated or sync.in_transaction())
            if reusable and len(self.connections) < self.limit:
                self.connections.append((connection, sync))
            elif not sync.closed:
                await run_sync(sync.close)  # back to the pool, which resets it


_HELD: weakref.WeakKeyDictionary[Engine, _Held] = weakref.WeakKeyDictionary()


def _hold_connections(engine: AsyncEngine, limit: int) -> None:
    held = _Held(limit)
    _HELD[engine.sync_engine] = held
    event.listen(engine.sync_engine, "engine_disposed", held.close_all)


def _begin(engine: Engine, connection: Connection | None, mode: str) -> Connection:
    """``connection`` (a new one from ``engine``'s pool when ``None``) in a new
    transaction, begun in SQLite's ``mode``."""
    if connection is None:
        connection = engine.connect()
    try:
        connection.execution_options(**{SQLITE_BEGIN: mode})
        connection.begin()
    except BaseException:
        connection.close()
        raise
    return connection


def _finish(session: Session, connection: Connection, commit: bool) -> None:
    """End the transaction of ``connection``: the session's pending changes flushed and
    committed (``commit``), else rolled back, also when anything here fails."""
    try:
        if session.in_transaction():  # the ORM was used: it joined the connection's
            try:
                if commit:
                    session.flush()
            finally:
                session.close()  # leaves the connection's transaction to us
        if commit:
            connection.commit()
    finally:
        if connection.in_transaction():
            connection.rollback()


@asynccontextmanager
async def session_scope(
    sessionmaker: SessionMaker, *, write: bool = True
) -> AsyncIterator[AsyncSession]:
    """One transaction: committed when the block ends, rolled back on error.

    On SQLite a ``write`` transaction takes the database's write lock when it begins
    (``BEGIN IMMEDIATE``; writers queue up to the busy timeout), so what it reads cannot
    change before it writes. PostgreSQL ignores the flag and runs READ COMMITTED: code that
    reads a value to write it back locks the row (``SELECT ... FOR UPDATE``) or writes with
    one atomic statement, which holds on both databases.

    On a SQLite file the session is bound to a connection kept open from one transaction
    to the next (at most the pool's size are kept): the transaction is the connection's,
    begun when the block starts and committed when it ends, and the session joins it
    only if the ORM is used (its pending changes are flushed before the commit). Taking a
    connection from the pool and giving it back (a reset, events, a ``Connection`` made
    and closed) and the session's own transaction cost three times what the SQLite
    transaction did. The engine's disposal closes the kept connections.
    """
    bind = sessionmaker.kw.get("bind")
    held = _HELD.get(bind.sync_engine) if isinstance(bind, AsyncEngine) else None
    if held is not None:
        assert isinstance(bind, AsyncEngine)
        connection, sync = await held.begin(bind, "IMMEDIATE" if write else "DEFERRED")
        session = sessionmaker(bind=connection)
        try:
            yield session
        except BaseException:
            await held.end(session, connection, sync, commit=False)
            raise
        await held.end(session, connection, sync, commit=True)
        return
    # What ``async with sessionmaker() as session`` and the session's own coroutines do,
    # with the synchronous session's methods run on reused greenlets (a transaction that
    # only commits costs two greenlet calls, not three new greenlets and a task).
    session = sessionmaker()
    sync_session = session.sync_session
    try:
        if write:
            # Procuring the connection begins the session's transaction with this option.
            await run_sync(sync_session.connection, execution_options=_IMMEDIATE)
        yield session
    except BaseException:
        await run_sync(_end, sync_session, commit=False)
        raise
    await run_sync(_end, sync_session, commit=True)


def transaction(connection: HTTPConnection) -> Any:
    """The request's single transaction (``async with transaction(request) as session``);
    a write transaction unless the request's method only reads."""
    sessionmaker: SessionMaker = connection.state.sessionmaker
    write = connection.scope.get("method", "GET") not in READ_ONLY_METHODS
    return session_scope(sessionmaker, write=write)


prepared = direct.prepared
"""Marks a statement built once as run again and again (see :func:`shared.direct.prepared`)."""


async def core_execute(
    session: AsyncSession, statement: Executable, params: Mapping[str, Any] | None = None
) -> Result[Any]:
    """Run a Core statement on the session's connection, in its transaction: the rows come
    back as Core rows without the ORM's execution layer (several times cheaper for small
    queries), and on SQLite SELECTs and single-row INSERTs without SQLAlchemy's execution
    layer either (:mod:`shared.direct`). Pending ORM changes are flushed first, as the
    session itself would. ``params``: values of the statement's named bind parameters (a
    statement built once with ``bindparam`` and run with new values each time skips
    building it and computing its cache key)."""
    if session.new or session.dirty or session.deleted:
        await session.flush()
    bind = session.bind
    if isinstance(bind, AsyncConnection):  # a kept connection (session_scope on SQLite)
        connection = bind
    else:
        connection = _established(session) or await session.connection()
    result = await direct.execute(connection, statement, params)
    if result is not None:
        return result
    return await connection.execute(statement, params)


def _established(session: AsyncSession) -> AsyncConnection | None:
    """The connection of the session's transaction when it already has one: what
    ``session.connection()`` returns then, without its trip through a greenlet."""
    sync_session = session.sync_session
    transaction = sync_session.get_transaction()
    if transaction is None or not transaction.is_active or sync_session.bind is None:
        return None
    entry = transaction._connections.get(sync_session.bind)
    if entry is None:
        return None
    return AsyncConnection._retrieve_proxy_for_target(entry[0])


async def ping(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))


async def by_name_or_id(session: AsyncSession, model: type[Named], name_or_id: str) -> Named | None:
    """The row of ``model`` whose id is ``name_or_id`` (when it reads as a UUID), else the
    one with that ``name``."""
    row = None
    with suppress(ValueError):  # not a UUID: only the name can match
        row = await session.get(model, uuid.UUID(name_or_id))
    if row is not None:
        return row
    query = select(model).where(model.name == name_or_id)  # type: ignore[attr-defined]
    return (await session.exec(query)).first()


async def flush_unique(
    session: AsyncSession,
    conflict: Exception,
    statement: Executable | None = None,
    params: Mapping[str, Any] | None = None,
) -> None:
    """Flush (or run ``statement``, an INSERT or UPDATE, with ``params``), raising
    ``conflict`` (a 409) when a unique constraint refuses the write: the constraint
    decides, so concurrent duplicates fail the same way as sequential ones. Build
    ``conflict`` before calling: after a failed flush the rows cannot be read."""
    try:
        if statement is None:
            await session.flush()
        else:
            await core_execute(session, statement, params)
    except IntegrityError as exc:
        # SQLite: "UNIQUE constraint failed: …"; PostgreSQL: "duplicate key value violates
        # unique constraint …". Any other integrity error is a bug, not a conflict.
        if "unique" not in str(exc.orig).lower():
            raise
        raise conflict from None
