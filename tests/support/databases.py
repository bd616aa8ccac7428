"""Real databases for tests: a SQLite file, or a fresh PostgreSQL database per test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine


def _admin_url(url: str) -> str:
    return str(make_url(url).set(drivername="postgresql+asyncpg"))


@asynccontextmanager
async def postgres_database(admin_url: str) -> AsyncIterator[str]:
    """Create ``test_<random>`` on the server of ``admin_url``; drop it afterwards."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    admin = create_async_engine(_admin_url(admin_url), isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            await conn.execute(text(f'CREATE DATABASE "{name}"'))
        url = make_url(_admin_url(admin_url)).set(database=name)
        try:
            yield url.render_as_string(hide_password=False)
        finally:
            async with admin.connect() as conn:
                await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        await admin.dispose()


def sqlite_url(directory: Path, name: str = "service") -> str:
    return f"sqlite+aiosqlite:///{directory / f'{name}.db'}"
