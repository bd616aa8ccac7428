"""Import boundaries: ``shared`` imports no service, and no service imports another.
``agent_cli`` (the agent-run CLI, shipped with agent-accounts) counts as a package of its
own: it speaks to the server over HTTP only, and the server does not import it.

Checked on the source with ``ast``, so an import hidden behind ``TYPE_CHECKING`` or inside
a function counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVICE_PACKAGES = {"identity", "tracking", "webhooks", "agent_accounts", "agent_cli"}


def imported_roots(source: str, filename: str = "<string>") -> set[str]:
    """Top-level package of every absolute import in ``source``."""
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def violations(owner: str | None, source: str, filename: str = "<string>") -> set[str]:
    """Service packages that code owned by ``owner`` (a service, or None for shared) may
    not import but does."""
    return (imported_roots(source, filename) & SERVICE_PACKAGES) - {owner}


def service_packages() -> dict[str, Path]:
    packages = {}
    for service_dir in sorted(p for p in (ROOT / "services").iterdir() if p.is_dir()):
        for candidate in service_dir.iterdir():
            if (candidate / "__init__.py").is_file():
                packages[candidate.name] = candidate
    return packages


def sources(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_service_package_is_known():
    assert set(service_packages()) == SERVICE_PACKAGES


def test_shared_imports_no_service():
    found = {
        str(path.relative_to(ROOT)): sorted(bad)
        for path in sources(ROOT / "shared")
        if (bad := violations(None, path.read_text(), str(path)))
    }
    assert found == {}


def test_no_service_imports_another_service():
    found = {
        str(path.relative_to(ROOT)): sorted(bad)
        for owner, package in service_packages().items()
        for path in sources(package)
        if (bad := violations(owner, path.read_text(), str(path)))
    }
    assert found == {}


def test_checker_flags_offending_imports():
    source = """
import os
import tracking.models
from identity.user import service
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from webhooks import app

def later():
    import agent_accounts
from . import sibling
"""
    assert violations(None, source) == SERVICE_PACKAGES - {"agent_cli"}
    assert violations("tracking", source) == {"identity", "webhooks", "agent_accounts"}
    assert violations("agent_cli", source) == {"identity", "tracking", "webhooks", "agent_accounts"}


def test_checker_allows_shared_and_third_party_imports():
    source = "import httpx\nfrom shared.db import transaction\nfrom .schemas import X\n"
    assert violations("tracking", source) == set()
    assert violations(None, source) == set()
