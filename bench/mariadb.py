"""Where the reference server keeps its data in a benchmark: MariaDB by default, the MySQL
family that ZenML runs on in production, or its own SQLite file (what ``zenml login
--local`` uses).

On MariaDB each run gets a database and a user of its own (``bench_<pid>_zenml``, with a
random password: ZenML refuses a MySQL URL without one), made through the administrator
URL ``--mariadb-url`` and dropped after the run unless ``--keep``. The server migrates the
new, empty database as it starts. The administration runs in the reference's own
environment, through the PyMySQL that ZenML itself depends on, so our environment needs no
MySQL driver.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.support.zenml_env import ReferenceServer, reference_server

DATABASES = ("mariadb", "sqlite")
DEFAULT_ADMIN_URL = "mysql://root@127.0.0.1:3306"
ADMIN_TIMEOUT = 60.0

# Run with the reference's interpreter: argv is the admin URL's parts, a database (or "")
# and JSON statements; prints the server's version and each statement's row count as JSON,
# or one line starting with "error:".
_ADMIN = """
import json, sys
import pymysql
host, port, user, password, database, statements = sys.argv[1:7]
try:
    connection = pymysql.connect(host=host, port=int(port), user=user, password=password,
                                 database=database or None, connect_timeout=5,
                                 autocommit=True)
except pymysql.err.OperationalError as exc:
    print(f"error: {exc.args[-1]}")
    sys.exit(1)
rows = []
with connection.cursor() as cursor:
    for statement in json.loads(statements):
        rows.append(cursor.execute(statement))
    cursor.execute("SELECT VERSION()")
    print(json.dumps({"version": cursor.fetchone()[0], "rows": rows}))
"""


class MariaDBError(Exception):
    """The MariaDB server could not be reached or administered; a one-line message."""


@dataclass(frozen=True)
class ReferenceStore:
    """The reference's ``ZENML_STORE_URL`` (``None``: SQLite in its data dir) and what it is,
    for the lines under a table."""

    url: str | None
    described: str
    admin_url: str = ""
    database: str = ""


def add_option(parser: argparse.ArgumentParser) -> None:
    """``--reference-database`` and ``--mariadb-url``."""
    parser.add_argument(
        "--reference-database",
        choices=DATABASES,
        default="mariadb",
        help="the reference's database: MariaDB (a database and a user made for the run on "
        "--mariadb-url's server) or SQLite in its data dir (default: %(default)s)",
    )
    parser.add_argument(
        "--mariadb-url",
        type=admin_url,
        default=DEFAULT_ADMIN_URL,
        help="a MariaDB (or MySQL) server, as a user who may create databases and users "
        "(default: %(default)s)",
    )


def admin_url(text: str) -> str:
    """A ``mysql://user[:password]@host[:port]`` URL (an argparse type)."""
    parts = urlsplit(text)
    if parts.scheme not in ("mysql", "mariadb") or not parts.hostname or not parts.username:
        raise argparse.ArgumentTypeError(
            f"must name a MariaDB server as mysql://user[:password]@host[:port]: {text!r}"
        )
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number in {text!r}") from None
    return text


@contextlib.contextmanager
def reference_store(
    python: Path, database: str, url: str, *, keep: bool
) -> Iterator[ReferenceStore]:
    """The reference's store: SQLite (``database`` ``"sqlite"``), or a new database and user
    on the MariaDB server at ``url``, administered with ``python`` (the reference's
    interpreter) and dropped on exit unless ``keep``. Raises :class:`MariaDBError` when
    the server does not answer."""
    if database == "sqlite":
        yield ReferenceStore(None, "SQLite (a file in its data dir)")
        return
    name = f"bench_{os.getpid()}_zenml"
    password = secrets.token_hex(16)
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 3306
    version, _ = _administer(python, url, [*_drop(name), *_create(name, password)])
    try:
        yield ReferenceStore(
            f"mysql://{name}:{password}@{host}:{port}/{name}",
            f"MariaDB {version.split('-')[0]} at {host}:{port}"
            if "mariadb" in version.lower()
            else f"MySQL {version} at {host}:{port}",
            url,
            name,
        )
    finally:
        if not keep:
            _administer(python, url, _drop(name))


@contextlib.contextmanager
def reference_on_store(
    python: Path, data_dir: Path, args: argparse.Namespace, **options: Any
) -> Iterator[tuple[ReferenceServer, ReferenceStore]]:
    """``reference_server(python, data_dir, **options)`` on the store that
    ``--reference-database`` names (:func:`reference_store`)."""
    with (
        reference_store(python, args.reference_database, args.mariadb_url, keep=args.keep) as store,
        reference_server(python, data_dir, store_url=store.url, **options) as server,
    ):
        yield server, store


def _create(name: str, password: str) -> list[str]:
    # '%' and 'localhost': a TCP connection from 127.0.0.1 may be matched as either.
    return [
        f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4",
        *(f"CREATE USER '{name}'@'{h}' IDENTIFIED BY '{password}'" for h in ("%", "localhost")),
        *(f"GRANT ALL PRIVILEGES ON `{name}`.* TO '{name}'@'{h}'" for h in ("%", "localhost")),
    ]


def _drop(name: str) -> list[str]:
    """What a run (or a killed run of the same pid) made, dropped."""
    return [
        f"DROP DATABASE IF EXISTS `{name}`",
        *(f"DROP USER IF EXISTS '{name}'@'{h}'" for h in ("%", "localhost")),
    ]


# The reference's counterpart of ``scaling.copy_versions``: versions {start} to {stop} - 1,
# numbered, typed and named as ``tracking.version_body`` does, the rest of each row copied
# from the first one its API wrote; ``created`` (whole seconds, as the API stores it) a
# second later every 100 rows. MariaDB's sequence engine gives the numbers.
COPY = """
INSERT INTO artifact_version (id, created, updated, version, version_number, type, uri,
    materializer, data_type, save_type, content_hash, item_count, artifact_id,
    artifact_store_id, user_id, project_id)
SELECT REPLACE(UUID(), '-', ''),
       l.created + INTERVAL ((s.seq - {start}) DIV 100 + 1) SECOND,
       l.created + INTERVAL ((s.seq - {start}) DIV 100 + 1) SECOND,
       CAST(s.seq DIV {artifacts} + 1 AS CHAR), s.seq DIV {artifacts} + 1,
       IF((s.seq DIV {artifacts} + 1) % 2 = 0, 'DataArtifact', 'ModelArtifact'),
       CONCAT('/bench/', s.seq), t.materializer, t.data_type, t.save_type, t.content_hash,
       t.item_count, a.id, t.artifact_store_id, t.user_id, t.project_id
FROM seq_{start}_to_{last} AS s
CROSS JOIN (SELECT * FROM artifact_version WHERE uri = '/bench/0') AS t
CROSS JOIN (SELECT MAX(created) AS created FROM artifact_version) AS l
JOIN artifact AS a
    ON a.project_id = t.project_id AND a.name = CONCAT('bench-v-', s.seq MOD {artifacts})
"""
COPY_CHUNK = 250_000


def copy_versions(
    python: Path, store: ReferenceStore, start: int, stop: int, artifacts: int
) -> None:
    """Versions ``start`` to ``stop - 1`` written straight into the reference's MariaDB
    database (:data:`COPY`), then ``ANALYZE TABLE``; a row count short of the range is a
    :class:`MariaDBError`."""
    statements = [
        COPY.format(start=begin, last=min(begin + COPY_CHUNK, stop) - 1, artifacts=artifacts)
        for begin in range(start, stop, COPY_CHUNK)
    ]
    _, rows = _administer(
        python, store.admin_url, statements, database=store.database, timeout=3600
    )
    if sum(rows) != stop - start:
        raise MariaDBError(f"copied {sum(rows)} versions of {stop - start} (artifacts missing?)")
    _administer(
        python, store.admin_url, ["ANALYZE TABLE artifact_version"], database=store.database
    )


def execute(
    python: Path, store: ReferenceStore, statements: Sequence[str], timeout: float = 3600
) -> list[int]:
    """``statements`` run in order on one connection to the reference's database (so
    session variables and prepared statements carry over); each one's row count."""
    return _administer(
        python, store.admin_url, statements, database=store.database, timeout=timeout
    )[1]


def _administer(
    python: Path,
    url: str,
    statements: Sequence[str],
    *,
    database: str = "",
    timeout: float = ADMIN_TIMEOUT,
) -> tuple[str, list[int]]:
    """Run ``statements`` on ``url``'s server (in ``database``); its version and each
    statement's row count."""
    parts = urlsplit(url)
    where = f"{parts.hostname}:{parts.port or 3306}"
    argv = [str(python), "-c", _ADMIN, parts.hostname or "", str(parts.port or 3306),
            parts.username or "", parts.password or "", database,
            json.dumps(list(statements))]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MariaDBError(f"MariaDB at {where}: {exc}") from None
    lines = done.stdout.strip().splitlines()
    if done.returncode == 0 and lines:
        result = json.loads(lines[-1])
        return str(result["version"]), [int(n) for n in result["rows"]]
    reason = lines[-1].removeprefix("error: ") if lines else _last_line(done.stderr)
    raise MariaDBError(
        f"MariaDB at {where} is not usable: {reason} "
        "(name a server with --mariadb-url, or choose --reference-database sqlite)"
    )


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
