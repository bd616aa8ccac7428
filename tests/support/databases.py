"""Real PostgreSQL databases for tests, each test its own.

A test of a service gets its database already at the head of that service's migrations
(its app's start-up then finds nothing to do), since migrating anew for every test cost
more than most tests themselves: a test's database took about half a second to create,
migrate and drop. :class:`Databases` migrates once per test process instead: databases
migrated once, lent to one test at a time and emptied after it (:meth:`Databases.postgres`):
every table's rows deleted, sequences restarted, the connections the test left behind
closed. One whose schema the test changed (the schema is compared with what migrating
made) is dropped instead of lent again, so no test sees what an earlier one did.
Databases with no service are created empty and dropped, as the tests of migrations
themselves need.

The pool is dropped when the test session ends; what a killed session left behind is
dropped by the next one (:meth:`Databases.drop_abandoned`).
"""

from __future__ import annotations

import importlib
import os
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url

from shared.db import create_engine
from shared.migrations import upgrade
from tests.support.postgres_server import alive

SERVICES = ("identity", "tracking", "webhooks", "agent_accounts")
"""The services with migrations (their packages)."""

ASYNCPG = "postgresql"
"""The driver name of a URL for asyncpg itself (:func:`postgres_url`)."""


def postgres_url(
    url: str, database: str | None = None, *, driver: str = "postgresql+asyncpg"
) -> str:
    """The PostgreSQL ``url`` with ``driver`` (SQLAlchemy's asyncpg dialect, or
    :data:`ASYNCPG` for asyncpg itself), on ``database`` when given."""
    parsed = make_url(url).set(drivername=driver)
    if database is not None:
        parsed = parsed.set(database=database)
    return parsed.render_as_string(hide_password=False)


def migrations_of(service: str) -> Path:
    """``service``'s migrations (its models imported, so ``SQLModel.metadata`` has them)."""
    importlib.import_module(f"{service}.models")
    location: Path = importlib.import_module(f"{service}.app").MIGRATIONS
    return location


async def migrate(url: str, service: str) -> None:
    """Bring the database at ``url`` to the head of ``service``'s migrations, as the
    service's app does at start-up."""
    engine = create_engine(url)
    try:
        await upgrade(engine, migrations_of(service), lock_name=f"{service}-migrations")
    finally:
        await engine.dispose()


# The schema's version: per catalog that holds a part of a schema (relations, columns,
# defaults, constraints, indexes, types, enum labels, functions, triggers, schemas,
# sequences), its row count and the newest transaction that wrote one of its rows, and the
# migration head. Any DDL writes catalog rows (a new version of a row when it alters one,
# so a newer xmin) or deletes them (a lower count); rows are not in it. With it, lending a
# database again costs 18-34 ms; with an md5 of the schema's text it cost 27-60 ms (most of
# it reading the schema on a connection whose catalog caches are cold).
_SCHEMA = """
SELECT concat_ws(' ',
  (SELECT count(*) || '/' || coalesce(max(xmin::text::bigint), 0) FROM pg_class),
  (SELECT count(*) || '/' || coalesce(max(xmin::text::bigint), 0) FROM pg_attribute),
  (SELECT count(*) || '/' || coalesce(max(xmin::text::bigint), 0) FROM pg_attrdef),
  (SELECT count(*) || '/' || coalesce(max(xmin::text::bigint), 0) FROM pg_constraint),
  (SELECT count(*) || '/' || coalesce(max(xmin::text::bigint), 0) FROM pg_index),
  (SELECT count(*) || '/' || coalesce(max(xmin::text::bigint), 0) FROM pg_type),
  (SELECT count(*) || '/' || coalesce(max(xmin::text::bigint), 0) FROM pg_enum),
  (SELECT count(*) || '/' || coalesce(max(xmin::text::bigint), 0) FROM pg_proc),
  (SELECT count(*) || '/' || coalesce(max(xmin::text::bigint), 0) FROM pg_trigger),
  (SELECT count(*) || '/' || coalesce(max(xmin::text::bigint), 0) FROM pg_namespace),
  (SELECT count(*) || '/' || coalesce(max(xmin::text::bigint), 0) FROM pg_sequence),
  (SELECT string_agg(version_num, ',') FROM alembic_version)
)
"""

# What emptying a database takes: a DELETE of every table's rows (the migration head
# stays) and every sequence set back to its start (setval writes no catalog row, where
# ALTER SEQUENCE ... RESTART did: the schema's version stays as migrating left it).
_EMPTYING = """
SELECT 'DELETE FROM ' || quote_ident(schemaname) || '.' || quote_ident(tablename)
  FROM pg_tables
  WHERE schemaname NOT IN ('pg_catalog', 'information_schema') AND tablename <> 'alembic_version'
UNION ALL
SELECT 'SELECT setval('
       || quote_literal(quote_ident(schemaname) || '.' || quote_ident(sequencename))
       || ', ' || start_value || ', false)'
  FROM pg_sequences
"""

_OTHERS = """
SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()
"""


_NAME = re.compile(r"test_(\d+)_[0-9a-f]{6}_\d+")
"""A database :class:`Databases` names: ``test_<pid>_<random>_<count>``."""


class _Lent:
    """A migrated PostgreSQL database of the pool: its name, its schema's version (see
    ``_SCHEMA``) and the statements that empty it."""

    __slots__ = ("emptying", "name", "schema")

    def __init__(self, name: str, schema: str, emptying: str) -> None:
        self.name = name
        self.schema = schema
        self.emptying = emptying


class Databases:
    """The databases of one test process (see the module docstring), on the PostgreSQL
    server whose maintenance database ``admin_url`` names. :meth:`aclose` drops the
    databases it keeps."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self._free: dict[str, list[_Lent]] = {}
        self._kept: set[str] = set()  # every pooled database, lent or free
        # Names nobody else picks: the process, then a count.
        self._prefix = f"test_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        self._count = 0

    @asynccontextmanager
    async def postgres(self, service: str | None) -> AsyncIterator[str]:
        """A PostgreSQL database for one test: at ``service``'s head (lent from the pool,
        emptied afterwards), or new and empty (``service`` ``None``, dropped afterwards)."""
        if service is None:
            name = await self._create()
            try:
                yield postgres_url(self.admin_url, name)
            finally:
                await self._drop(name)
            return
        free = self._free.setdefault(service, [])
        lent = free.pop() if free else await self._migrated(service)
        reusable = False
        try:
            yield postgres_url(self.admin_url, lent.name)
            reusable = await self._emptied(lent)
        finally:
            if reusable:
                free.append(lent)
            else:
                self._kept.discard(lent.name)
                await self._drop(lent.name)

    async def drop_abandoned(self) -> list[str]:
        """Drop the databases that test processes no longer running left behind (killed
        before their session ended): the names, dropped. (For a server only this machine's
        test processes use: the process ids are this machine's.)"""
        admin = await self._connect()
        try:
            names = [row[0] for row in await admin.fetch("SELECT datname FROM pg_database")]
            dropped = []
            for name in names:
                match = _NAME.fullmatch(name)
                if match is None or alive(int(match[1])):
                    continue
                try:
                    await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                except asyncpg.PostgresError:
                    continue  # another process dropping it at the same moment
                dropped.append(name)
            return dropped
        finally:
            await admin.close()

    async def aclose(self) -> None:
        """Drop every pooled database."""
        for name in sorted(self._kept):
            await self._drop(name)
        self._kept.clear()
        self._free.clear()

    async def _connect(self, database: str | None = None) -> asyncpg.Connection:
        """A connection to ``database``, or (``None``) to the server's maintenance one."""
        return await asyncpg.connect(postgres_url(self.admin_url, database, driver=ASYNCPG))

    async def _create(self) -> str:
        self._count += 1
        name = f"{self._prefix}_{self._count}"
        admin = await self._connect()
        try:
            await admin.execute(f'CREATE DATABASE "{name}"')
        finally:
            await admin.close()
        return name

    async def _drop(self, name: str) -> None:
        admin = await self._connect()
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()

    async def _migrated(self, service: str) -> _Lent:
        name = await self._create()
        self._kept.add(name)
        await migrate(postgres_url(self.admin_url, name), service)
        connection = await self._connect(name)
        try:
            schema: str = await connection.fetchval(_SCHEMA)
            emptying = "; ".join(sorted(row[0] for row in await connection.fetch(_EMPTYING)))
        finally:
            await connection.close()
        return _Lent(name, schema, emptying)

    async def _emptied(self, lent: _Lent) -> bool:
        """Whether ``lent`` is as migrating left it again (its rows gone, no connection
        left), so the next test may have it."""
        try:
            connection = await self._connect(lent.name)
        except (OSError, asyncpg.PostgresError):
            return False
        try:
            await connection.execute(_OTHERS)
            if await connection.fetchval(_SCHEMA) != lent.schema:
                return False
            if lent.emptying:
                # Every table at once, in any order: foreign keys are not checked (as in
                # a replica). A DELETE of a few rows costs a fraction of a millisecond,
                # where a TRUNCATE makes each table's files anew (~150 ms for tracking's).
                async with connection.transaction():
                    await connection.execute("SET LOCAL session_replication_role = replica")
                    await connection.execute(lent.emptying)
        except asyncpg.PostgresError:
            return False
        finally:
            await connection.close()
        return True
