"""Async SQLModel engine (PostgreSQL, asyncpg), sessions and the one-transaction-per-request
helper.

Handlers open exactly one transaction with :func:`transaction`, which commits when the
block ends (before the response is rendered) and rolls back on any exception. Services
``flush()`` and never ``commit()``.
"""

from __future__ import annotations

import datetime as dt
import uuid
import zlib
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from typing import Any, TypeVar

from sqlalchemy import Result, func, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.orm import Session
from sqlalchemy.sql import Executable
from sqlmodel import SQLModel, select
from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import HTTPConnection

from shared.greenlets import run_sync
from shared.metrics import instrument_engine

__all__ = [
    "Clock",
    "SessionMaker",
    "by_name_or_id",
    "core_execute",
    "create_engine",
    "create_sessionmaker",
    "flush_unique",
    "new_id",
    "session_scope",
    "take_turns",
    "transaction",
    "utcnow",
]

SessionMaker = async_sessionmaker[AsyncSession]
Named = TypeVar("Named", bound=SQLModel)


def utcnow() -> dt.datetime:
    """Aware UTC, as SQLModel's datetime columns store it (see :mod:`shared.types` for the
    naive wire form)."""
    return dt.datetime.now(dt.UTC)


Clock = Callable[[], dt.datetime]
"""A service's notion of now, as :func:`utcnow` gives it: what ``create_app`` takes, so
that tests move time instead of sleeping."""


def new_id() -> uuid.UUID:
    return uuid.uuid4()


def create_engine(url: str, *, pool_size: int = 10, echo: bool = False) -> AsyncEngine:
    """The service's engine on the PostgreSQL database at ``url`` (asyncpg)."""
    engine = create_async_engine(
        url,
        echo=echo,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
    )
    instrument_engine(engine)
    return engine


def create_sessionmaker(engine: AsyncEngine) -> SessionMaker:
    return async_sessionmaker(engine, class_=AsyncSession, expire_on_commit=False)


def _end(session: Session, *, commit: bool) -> None:
    """Commit (or roll back) ``session``'s transaction, then close it whatever happens."""
    try:
        if commit:
            session.commit()
        else:
            session.rollback()
    finally:
        session.close()


@asynccontextmanager
async def session_scope(sessionmaker: SessionMaker) -> AsyncIterator[AsyncSession]:
    """One transaction: committed when the block ends, rolled back on error.

    PostgreSQL runs it READ COMMITTED: code that reads a value to write it back locks the
    row (``SELECT ... FOR UPDATE``) or writes with one atomic statement.

    The commit (or rollback) and close run in one call on a reused greenlet
    (:func:`shared.greenlets.run_sync`), where ``async with sessionmaker() as session,
    session.begin()`` makes a new greenlet for each of begin, commit and close.
    """
    session = sessionmaker()
    sync_session = session.sync_session
    try:
        yield session
    except BaseException:
        await run_sync(_end, sync_session, commit=False)
        raise
    await run_sync(_end, sync_session, commit=True)


def transaction(connection: HTTPConnection) -> Any:
    """The request's single transaction (``async with transaction(request) as session``)."""
    sessionmaker: SessionMaker = connection.state.sessionmaker
    return session_scope(sessionmaker)


async def core_execute(
    session: AsyncSession, statement: Executable, params: Mapping[str, Any] | None = None
) -> Result[Any]:
    """Run a Core statement on the session's connection, in its transaction: the rows come
    back as Core rows without the ORM's execution layer (several times cheaper for small
    queries). Pending ORM changes are flushed first, as the session itself would.
    ``params``: values of the statement's named bind parameters (a statement built once
    with ``bindparam`` and run with new values each time skips building it and computing
    its cache key)."""
    if session.new or session.dirty or session.deleted:
        await session.flush()
    connection = await session.connection()
    return await connection.execute(statement, params)


def advisory_key(name: str) -> int:
    """The PostgreSQL advisory lock key of ``name`` (one per service and purpose)."""
    return zlib.crc32(name.encode())


async def take_turns(session: AsyncSession, name: str) -> None:
    """Hold the advisory lock ``name`` until the session's transaction ends, so replicas
    starting together run what follows one after another (a check-then-insert at start-up:
    the second finds what the first made)."""
    lock = select(func.pg_advisory_xact_lock(advisory_key(name)))
    await session.exec(lock)


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
        # "duplicate key value violates unique constraint …"; any other integrity error
        # is a bug, not a conflict.
        if "unique" not in str(exc.orig).lower():
            raise
        raise conflict from None
