"""Whether a service's database is at its newest migration, without importing alembic.

alembic (with mako) holds ~8.5 MB of a process's memory once imported. A replica that
starts on a database already at head has nothing to migrate, so :func:`at_head` answers
that from the revision files and the ``alembic_version`` table alone, and
:mod:`shared.migrations` (alembic) is imported only when there is something to do.
"""

from __future__ import annotations

import ast
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

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


def declared_head(script_location: Path) -> str | None:
    """The one revision no other names as its ``down_revision``; ``None`` when the history
    is not one line of plain string revisions (then alembic decides)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in sorted((script_location / "versions").glob("*.py")):
        declared = _declared(path)
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
