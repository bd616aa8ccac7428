"""Alembic migrations, one history per service, run at start-up.

Each service keeps ``<package>/migrations/`` with an ``env.py`` that calls
:func:`run_env` and a ``versions/`` folder. :func:`upgrade` runs the history to ``head``
on the service's async engine; on PostgreSQL an advisory lock makes concurrent replicas
take turns, so only one applies a given revision.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from alembic import command, context
from alembic.config import Config
from sqlalchemy import MetaData, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from shared.db import SQLITE_BEGIN


def sqlite_statistics(
    connection: Connection,
    table: str,
    rows: Sequence[tuple[str | None, str]],
    drop: Sequence[str] = (),
) -> None:
    """Replace the SQLite planner's statistics (``sqlite_stat1``, which must exist) of the
    ``drop`` indexes of ``table`` with ``rows`` (index, stat), without an ``ANALYZE`` of
    the table (which may be large), and load them into this connection; connections opened
    later read them when they open. Nothing on another database."""
    if connection.dialect.name != "sqlite":
        return
    for dropped in drop:
        connection.exec_driver_sql(
            "DELETE FROM sqlite_stat1 WHERE tbl = ? AND idx = ?", (table, dropped)
        )
    for index, stat in rows:
        connection.exec_driver_sql(
            "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)", (table, index, stat)
        )
    connection.exec_driver_sql("ANALYZE sqlite_schema")


def alembic_config(script_location: Path, connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(script_location))
    config.set_main_option("version_table", "alembic_version")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def _upgrade_sync(connection: Connection, script_location: Path, lock_name: str) -> None:
    # Replicas (or uvicorn workers) starting together all get here: they take turns, so
    # the first applies each revision and the others find the database at head.
    if connection.dialect.name == "postgresql":
        key = zlib.crc32(lock_name.encode())
        connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})
    command.upgrade(alembic_config(script_location, connection), "head")


async def upgrade(engine: AsyncEngine, script_location: Path, *, lock_name: str) -> None:
    """Bring the database to the newest revision of ``script_location``."""
    # On SQLite the transaction takes the write lock up front (see shared.db), so two
    # starters take turns and a failed migration rolls back whole.
    async with engine.connect() as conn:
        conn = await conn.execution_options(**{SQLITE_BEGIN: "IMMEDIATE"})
        async with conn.begin():
            await conn.run_sync(_upgrade_sync, script_location, lock_name)


def run_env(target_metadata: MetaData) -> None:
    """Body of every service's ``migrations/env.py`` (online mode, given a connection)."""
    connection: Any = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("migrations run through shared.migrations.upgrade() only")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        transaction_per_migration=False,
    )
    with context.begin_transaction():
        context.run_migrations()


def _revision_sync(
    connection: Connection, script_location: Path, message: str, rev_id: str | None
) -> None:
    command.upgrade(alembic_config(script_location, connection), "head")
    command.revision(
        alembic_config(script_location, connection),
        message=message,
        autogenerate=True,
        rev_id=rev_id,
    )


async def autogenerate(script_location: Path, message: str, rev_id: str | None = None) -> None:
    """Write a new revision with what the models have and ``head`` lacks (dev tool).

    Compares against a scratch SQLite database brought to ``head``; review the file it
    writes, since autogenerate cannot see renames and server defaults.
    """
    import tempfile

    from shared.db import create_engine

    with tempfile.TemporaryDirectory() as scratch:
        engine = create_engine(f"sqlite+aiosqlite:///{scratch}/scratch.db")
        try:
            async with engine.begin() as conn:
                await conn.run_sync(_revision_sync, script_location, message, rev_id)
        finally:
            await engine.dispose()


def pending_changes(connection: Connection, target_metadata: MetaData) -> list[Any]:
    """What differs between the live schema and the models (empty when in sync)."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    context_ = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context_, target_metadata))


def main() -> None:
    """``python -m shared.migrations <package> "<message>" [rev_id]``."""
    import asyncio
    import importlib
    import sys

    if len(sys.argv) < 3:
        raise SystemExit('usage: python -m shared.migrations <package> "<message>" [rev_id]')
    package = importlib.import_module(sys.argv[1])
    importlib.import_module(f"{sys.argv[1]}.models")
    location = Path(package.__file__ or "").parent / "migrations"
    asyncio.run(autogenerate(location, sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))


if __name__ == "__main__":
    main()
