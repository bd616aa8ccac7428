"""A service's migrations at start-up, without alembic in the service's process.

alembic (with mako) holds ~8.5 MB of a process's memory once imported, for good. So
:func:`migrate` first asks :func:`at_head` (the revision files, read as text, and the
``alembic_version`` table), and only a database behind its head is upgraded, by
:mod:`shared.migrations` in a child process (``python -m shared.revisions``) whose memory
goes when it exits. Its log lines go to the service's stderr.
"""

from __future__ import annotations

import ast
import asyncio
import os
import sys
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["at_head", "declared_head", "migrate"]

# The child's database URL: in its environment, not on its command line (ps shows that).
_URL_VARIABLE = "SHARED_MIGRATE_DATABASE_URL"

_NAMES = ("revision", "down_revision")


def _declared(path: Path) -> dict[str, object]:
    """The module-level ``revision``/``down_revision`` of a revision file (read, not run)."""
    found: dict[str, object] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.AnnAssign | ast.Assign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id in _NAMES:
                    try:
                        found[target.id] = ast.literal_eval(node.value)
                    except ValueError:
                        found[target.id] = node  # not a literal: not understood here
    return found


# The files' declarations by (path, size, modification time): a file read once per process
# while it is unchanged (parsing a service's revision files costs ~10 ms of CPU, paid at
# each app start before: in the tests, at every test's).
_READ: dict[tuple[Path, int, int], dict[str, object]] = {}


def _declared_once(path: Path) -> dict[str, object]:
    status = path.stat()
    key = (path, status.st_size, status.st_mtime_ns)
    if key not in _READ:
        _READ[key] = _declared(path)
    return _READ[key]


def declared_head(script_location: Path) -> str | None:
    """The one revision no other names as its ``down_revision``; ``None`` when the history
    is not one line of plain string revisions (then alembic decides)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in sorted((script_location / "versions").glob("*.py")):
        declared = _declared_once(path)
        revision, parent = declared.get("revision"), declared.get("down_revision")
        if not isinstance(revision, str) or not (parent is None or isinstance(parent, str)):
            return None
        revisions.add(revision)
        if parent is not None:
            parents.add(parent)
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


async def at_head(engine: AsyncEngine, script_location: Path) -> bool:
    """Whether the database's ``alembic_version`` is exactly the files' one head."""
    head = declared_head(script_location)
    if head is None:
        return False
    async with engine.connect() as conn:
        if (await conn.execute(text("SELECT to_regclass('alembic_version')"))).scalar() is None:
            return False
        versions = (await conn.execute(text("SELECT version_num FROM alembic_version"))).all()
    return [row[0] for row in versions] == [head]


async def migrate(
    engine: AsyncEngine,
    database_url: str,
    script_location: Path,
    *,
    lock_name: str,
    log_level: str = "INFO",
    log_json: bool = True,
) -> None:
    """Bring the database to head (a child process runs alembic when it is behind)."""
    if await at_head(engine, script_location):
        return
    environment = {**os.environ, _URL_VARIABLE: database_url}
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "shared.revisions",
        str(script_location),
        lock_name,
        log_level,
        "json" if log_json else "text",
        env=environment,
    )
    code = await child.wait()
    if code != 0:
        raise RuntimeError(f"the migrations in {script_location} failed (exit {code}), see above")


def main(argv: list[str]) -> None:
    """The child: ``python -m shared.revisions LOCATION LOCK_NAME LEVEL json|text``."""
    from shared.db import create_engine
    from shared.logging import configure_logging
    from shared.migrations import upgrade

    location, lock_name, level, style = argv
    configure_logging(level, json_output=style == "json")

    async def run() -> None:
        engine = create_engine(os.environ[_URL_VARIABLE], pool_size=1)
        try:
            await upgrade(engine, Path(location), lock_name=lock_name)
        finally:
            await engine.dispose()

    asyncio.run(run())


if __name__ == "__main__":
    main(sys.argv[1:])
