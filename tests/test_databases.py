"""The tests' databases (tests.support.databases): every test gets one of its own, at its
service's head, and none sees what an earlier test left."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from tests.support.databases import ASYNCPG, Databases, postgres_url

SERVICE = "webhooks"


async def _names(admin_url: str) -> set[str]:
    connection = await asyncpg.connect(admin_url)
    try:
        return {row[0] for row in await connection.fetch("SELECT datname FROM pg_database")}
    finally:
        await connection.close()


def _dsn(url: str) -> str:
    return postgres_url(url, driver=ASYNCPG)


@pytest.fixture
async def pool(databases: Databases) -> AsyncIterator[Databases]:
    """A pool of its own on the session's server (the session's pool stays untouched)."""
    own = Databases(databases.admin_url)
    try:
        yield own
    finally:
        await own.aclose()


async def test_postgres_lends_one_database_again_emptied(pool: Databases) -> None:
    async with pool.postgres(SERVICE) as url:
        connection = await asyncpg.connect(_dsn(url))
        version = await connection.fetchval("SELECT version_num FROM alembic_version")
        await connection.execute(
            "INSERT INTO webhooks (id, project_id, user_id, name, webhook_type, active,"
            " secret_ciphertext, version, created, updated)"
            " VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'w', 'custom',"
            " true, 'x', 1, now(), now())"
        )
        # Left open: the pool closes it.
    async with pool.postgres(SERVICE) as again:
        assert again == url
        assert connection.is_closed() or not await _answers(connection)
        fresh = await asyncpg.connect(_dsn(again))
        try:
            assert await fresh.fetchval("SELECT count(*) FROM webhooks") == 0
            assert await fresh.fetchval("SELECT version_num FROM alembic_version") == version
        finally:
            await fresh.close()


async def test_postgres_lends_again_with_its_sequences_back_at_their_start(
    pool: Databases,
) -> None:
    sequence = "server_settings_id_seq"  # identity's one sequence
    async with pool.postgres("identity") as url:
        connection = await asyncpg.connect(_dsn(url))
        try:
            await connection.fetchval(f"SELECT nextval('{sequence}')")
            assert await connection.fetchval(f"SELECT nextval('{sequence}')") > 1
        finally:
            await connection.close()
    async with pool.postgres("identity") as again:
        assert again == url  # lent again: setting a sequence back changes no schema
        connection = await asyncpg.connect(_dsn(again))
        try:
            assert await connection.fetchval(f"SELECT nextval('{sequence}')") == 1
        finally:
            await connection.close()


async def _answers(connection: asyncpg.Connection) -> bool:
    try:
        await connection.fetchval("SELECT 1")
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
        return False
    return True


async def test_postgres_drops_a_database_whose_schema_a_test_changed(pool: Databases) -> None:
    async with pool.postgres(SERVICE) as url:
        connection = await asyncpg.connect(_dsn(url))
        await connection.execute("CREATE INDEX extra ON webhooks (name)")
        await connection.close()
    name = make_url(url).database
    assert name not in await _names(pool.admin_url)
    async with pool.postgres(SERVICE) as other:
        assert other != url
        connection = await asyncpg.connect(_dsn(other))
        try:
            assert await connection.fetchval("SELECT to_regclass('extra')") is None
        finally:
            await connection.close()


async def test_postgres_without_a_service_is_empty_and_dropped(pool: Databases) -> None:
    async with pool.postgres(None) as url:
        connection = await asyncpg.connect(_dsn(url))
        try:
            assert await connection.fetchval("SELECT to_regclass('alembic_version')") is None
        finally:
            await connection.close()
    assert make_url(url).database not in await _names(pool.admin_url)


async def test_aclose_drops_every_pooled_database(pool: Databases) -> None:
    async with pool.postgres(SERVICE) as first, pool.postgres(SERVICE) as second:
        assert first != second  # both lent at once: two databases
    names = {make_url(first).database, make_url(second).database}
    assert names <= await _names(pool.admin_url)
    await pool.aclose()
    assert not names & await _names(pool.admin_url)


async def test_drop_abandoned_drops_what_dead_processes_left(pool: Databases) -> None:
    # A process that has ended (and been waited for): its pid names no process now.
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await child.wait()
    dead = child.pid
    names = [f"test_{dead}_abcdef_1", f"test_{os.getpid()}_abcdef_1", "test_other"]
    connection = await asyncpg.connect(pool.admin_url)
    try:
        for name in names:
            await connection.execute(f'CREATE DATABASE "{name}"')
        try:
            dropped = await pool.drop_abandoned()
            assert names[0] in dropped
            left = await _names(pool.admin_url)
            assert names[0] not in left
            assert names[1] in left  # a live process's
            assert names[2] in left  # not a name of ours
        finally:
            for name in names:
                await connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
    finally:
        await connection.close()
