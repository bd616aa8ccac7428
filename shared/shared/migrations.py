"""Alembic migrations, one history per service, run at start-up.

Each service keeps ``<package>/migrations/`` with an ``env.py`` that calls
:func:`run_env` and a ``versions/`` folder. :func:`upgrade` runs the history to ``head``
on the service's async engine; an advisory lock makes concurrent replicas take turns, so
only one applies a given revision.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import asyncpg
from alembic import command, context
from alembic.config import Config
from sqlalchemy import MetaData, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from shared.db import advisory_key, create_engine

__all__ = ["alembic_config", "pending_changes", "run_env", "upgrade"]


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
    connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": advisory_key(lock_name)})
    command.upgrade(alembic_config(script_location, connection), "head")


async def upgrade(engine: AsyncEngine, script_location: Path, *, lock_name: str) -> None:
    """Bring the database to the newest revision of ``script_location``, in one
    transaction: a failed migration rolls back whole."""
    async with engine.begin() as conn:
        await conn.run_sync(_upgrade_sync, script_location, lock_name)


def run_env(target_metadata: MetaData) -> None:
    """Body of every service's ``migrations/env.py`` (online mode, given a connection)."""
    connection: Any = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("migrations run through shared.migrations.upgrade() only")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
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


async def autogenerate(
    script_location: Path, message: str, server_url: str, rev_id: str | None = None
) -> None:
    """Write a new revision with what the models have and ``head`` lacks (dev tool).

    Compares against a scratch database, created on the PostgreSQL server of
    ``server_url`` (any database URL on it), brought to ``head`` and dropped after; review
    the file it writes, since autogenerate cannot see renames and server defaults.
    """
    server = make_url(server_url)
    admin_dsn = server.set(drivername="postgresql", database="postgres")
    scratch = f"autogenerate_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(admin_dsn.render_as_string(hide_password=False))
    try:
        await admin.execute(f'CREATE DATABASE "{scratch}"')
        engine = create_engine(
            server.set(drivername="postgresql+asyncpg", database=scratch).render_as_string(
                hide_password=False
            )
        )
        try:
            async with engine.begin() as conn:
                await conn.run_sync(_revision_sync, script_location, message, rev_id)
        finally:
            await engine.dispose()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')
        await admin.close()


def pending_changes(connection: Connection, target_metadata: MetaData) -> list[Any]:
    """What differs between the live schema and the models (empty when in sync)."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    context_ = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context_, target_metadata))


def main() -> None:
    """``python -m shared.migrations <package> "<message>" [rev_id]``, on the PostgreSQL
    server of ``DATABASE_URL`` (the settings' default when unset)."""
    import asyncio
    import importlib
    import sys

    from shared.settings import ServiceSettings

    if len(sys.argv) < 3:
        raise SystemExit('usage: python -m shared.migrations <package> "<message>" [rev_id]')
    package = importlib.import_module(sys.argv[1])
    importlib.import_module(f"{sys.argv[1]}.models")
    location = Path(package.__file__ or "").parent / "migrations"
    server_url = ServiceSettings().database_url
    rev_id = sys.argv[3] if len(sys.argv) > 3 else None
    asyncio.run(autogenerate(location, sys.argv[2], server_url, rev_id))


if __name__ == "__main__":
    main()
