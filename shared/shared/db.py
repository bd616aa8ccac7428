"""Async SQLModel engine, sessions and the one-transaction-per-request helper.

SQLite (the default) runs in WAL mode with foreign keys on; PostgreSQL is chosen by URL.
Handlers open exactly one transaction with :func:`transaction`, which commits when the
block ends (before the response is rendered) and rolls back on any exception. Services
``flush()`` and never ``commit()``.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.pool import NullPool
from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import HTTPConnection

SessionMaker = async_sessionmaker[AsyncSession]


def utcnow() -> dt.datetime:
    """Aware UTC, as SQLModel's datetime columns store it (see :mod:`shared.types` for the
    naive wire form)."""
    return dt.datetime.now(dt.UTC)


def new_id() -> uuid.UUID:
    return uuid.uuid4()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def create_engine(url: str, *, pool_size: int = 10, echo: bool = False) -> AsyncEngine:
    """Create the service's engine; SQLite files get their folder and WAL pragmas."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            from pathlib import Path

            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, echo=echo, poolclass=NullPool)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    return create_async_engine(
        url,
        echo=echo,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
    )


def create_sessionmaker(engine: AsyncEngine) -> SessionMaker:
    return async_sessionmaker(engine, class_=AsyncSession, expire_on_commit=False)


@asynccontextmanager
async def session_scope(sessionmaker: SessionMaker) -> AsyncIterator[AsyncSession]:
    """One transaction: committed when the block ends, rolled back on error."""
    async with sessionmaker() as session, session.begin():
        yield session


def transaction(connection: HTTPConnection) -> Any:
    """The request's single transaction (``async with transaction(request) as session``)."""
    sessionmaker: SessionMaker = connection.state.sessionmaker
    return session_scope(sessionmaker)


async def ping(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))


def sync_engine_of(engine: AsyncEngine) -> Engine:
    return engine.sync_engine
