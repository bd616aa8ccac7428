"""Where our stack's databases are in a benchmark: on the launcher's embedded PostgreSQL
(the default, its data in the stack's data dir), or on a server named with
``--database-url``, a new database per web service, made for the run and dropped after it
unless ``--keep``. The services migrate their new, empty databases as they start.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
from collections.abc import Iterator, Mapping, Sequence

import asyncpg
from sqlalchemy.engine import make_url

from deploy.config import load_stack
from deploy.local.environment import database_name
from deploy.local.postgres import with_database


def add_option(parser: argparse.ArgumentParser) -> None:
    """``--database-url``, for our stack."""
    parser.add_argument(
        "--database-url",
        type=server_url,
        help="a PostgreSQL server for our stack (postgresql://user:password@host:port/db): "
        "a new database per service there, dropped after the run unless --keep "
        "(default: the launcher's embedded PostgreSQL, in the stack's data dir)",
    )


def server_url(text: str) -> str:
    """A ``postgresql://`` URL (an argparse type)."""
    if not text.startswith(("postgresql://", "postgres://")):
        raise argparse.ArgumentTypeError(
            f"must name a PostgreSQL server (postgresql://...): {text!r}"
        )
    return text


@contextlib.contextmanager
def stack_databases(
    url: str | None, *, keep: bool, tag: str = ""
) -> Iterator[dict[str, str] | None]:
    """``launch_stack``'s ``databases``: ``None`` (``url`` ``None``: the launcher's
    embedded server), or a new database for each web service on ``url``'s server
    (``bench_<pid>_<tag>_<service>``: ``tag`` tells apart two stacks of one run), dropped
    on exit unless ``keep``."""
    if url is None:
        yield None
        return
    prefix = f"bench_{os.getpid()}_{tag}_" if tag else f"bench_{os.getpid()}_"
    names = {
        service.name: f"{prefix}{database_name(service.name)}"
        for service in load_stack().web_services
    }
    asyncio.run(_create(url, list(names.values())))
    try:
        yield {service: with_database(url, name) for service, name in names.items()}
    finally:
        if not keep:
            asyncio.run(_drop(url, list(names.values())))


def describe(url: str | None, launcher_output: str) -> str:
    """Our databases' server, for the lines under a table that say what ran: ``url``'s, or
    the embedded one that the launcher says it started."""
    if url is not None:
        server = make_url(url)
        where = f"{server.host or 'localhost'}:{server.port or 5432}"
        return f"PostgreSQL {server_version(url)} at {where}"
    found = re.search(r"postgres is ready at (postgresql://\S+)", launcher_output)
    if found is None:
        return "PostgreSQL (the launcher's embedded server)"
    return f"PostgreSQL {server_version(found[1])} (the launcher's embedded server)"


def service_url(service: str, databases: Mapping[str, str] | None, launcher_output: str) -> str:
    """The URL of ``service``'s database (asyncpg's form): in ``databases``, or on the
    embedded server that the launcher says it started."""
    if databases is not None:
        return with_database(databases[service], make_url(databases[service]).database or "")
    found = re.search(r"postgres is ready at (postgresql://\S+)", launcher_output)
    if found is None:
        raise ValueError("the launcher did not say where its PostgreSQL is")
    return with_database(found[1], database_name(service))


def server_version(url: str) -> str:
    async def read() -> str:
        connection = await asyncpg.connect(url)
        try:
            version: str = await connection.fetchval("SHOW server_version")
        finally:
            await connection.close()
        return version.split()[0]

    return asyncio.run(read())


async def _create(url: str, names: Sequence[str]) -> None:
    """``names`` made anew (one that a killed run left behind is dropped first)."""
    admin = await asyncpg.connect(url)
    try:
        for name in names:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()


async def _drop(url: str, names: Sequence[str]) -> None:
    admin = await asyncpg.connect(url)
    try:
        for name in names:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()
