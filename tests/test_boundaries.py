"""Import boundaries: ``shared`` imports no service, and no service imports another.
``agent_cli`` (the agent-run CLI, shipped with agent-accounts) counts as a package of its
own: it speaks to the server over HTTP only, and the server does not import it.

Checked on the source with ``ast``, so an import hidden behind ``TYPE_CHECKING`` or inside
a function counts too.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVICE_PACKAGES = {"identity", "tracking", "webhooks", "agent_accounts", "agent_cli"}


@functools.cache
def parsed(source: str, filename: str = "<string>") -> ast.Module:
    """``source``'s tree, parsed once however many checks read it (trees are not changed)."""
    return ast.parse(source, filename)


def imported_roots(source: str, filename: str = "<string>") -> set[str]:
    """Top-level package of every absolute import in ``source``."""
    roots: set[str] = set()
    for node in ast.walk(parsed(source, filename)):
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


# Layers inside a service. A domain's repository holds its SQL, its service its rules, its
# endpoints parse, call one service and render: checked on every service package.

SESSION_TYPES = {"sqlmodel.ext.asyncio.session", "sqlalchemy.ext.asyncio"}
"""What a service or an endpoint may import from SQLAlchemy or SQLModel: the session's
type (to hand it on), and SQLAlchemy's errors (a service may turn one into an answer)."""
SERVICE_MAY_IMPORT = SESSION_TYPES | {"sqlalchemy.exc"}
LINE_LIMIT = 500


def _imports(tree: ast.AST) -> list[tuple[str, list[str]]]:
    """Every import in ``tree`` as (module, names), ``import a.b`` as ("a.b", [])."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, [alias.name for alias in node.names]))
    return found


def _database_imports(tree: ast.AST, allowed: set[str]) -> list[str]:
    """Imports from SQLAlchemy or SQLModel other than the ``allowed`` modules."""
    return sorted(
        f"{module} {','.join(names)}".strip()
        for module, names in _imports(tree)
        if module.split(".")[0] in {"sqlalchemy", "sqlmodel"} and module not in allowed
    )


def repository_violations(source: str) -> list[str]:
    """A repository's imports of a service module (the layer above it)."""
    return sorted(
        module
        for module, names in _imports(parsed(source))
        if module.split(".")[-1] == "service" or "service" in names
    )


def service_violations(source: str) -> list[str]:
    """A service's imports of SQLAlchemy or SQLModel statement builders."""
    return _database_imports(parsed(source), SERVICE_MAY_IMPORT)


def _session_names(tree: ast.AST) -> set[str]:
    """Names that hold a session in an endpoint module: ``async with transaction(...) as
    x``, a parameter annotated ``AsyncSession``, and ``session`` itself."""
    names = {"session"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            names.update(
                item.optional_vars.id
                for item in node.items
                if isinstance(item.optional_vars, ast.Name)
                and isinstance(item.context_expr, ast.Call)
                and getattr(item.context_expr.func, "id", None) == "transaction"
            )
        elif isinstance(node, ast.arg) and "AsyncSession" in ast.unparse(
            node.annotation or ast.Constant(None)
        ):
            names.add(node.arg)
    return names


def endpoint_violations(source: str) -> list[str]:
    """What an endpoint does with a session besides handing it to a service: uses it
    (``session.get``, ``session.exec`` …), builds a repository on it, or imports
    statement builders."""
    tree = parsed(source)
    sessions = _session_names(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in sessions
        ):
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("Repository"):
            found.append((node.lineno, f"{ast.unparse(node.func)}(...)"))
    uses = [f"line {line}: {what}" for line, what in sorted(found)]
    return _database_imports(tree, SESSION_TYPES) + uses


def _layer_violations(filename: str, check: Callable[[str], list[str]]) -> dict[str, list[str]]:
    return {
        str(path.relative_to(ROOT)): bad
        for package in service_packages().values()
        for path in sources(package)
        if path.name == filename and (bad := check(path.read_text()))
    }


def test_no_repository_imports_a_service():
    assert _layer_violations("repository.py", repository_violations) == {}


def test_no_service_builds_statements():
    assert _layer_violations("service.py", service_violations) == {}


def test_no_endpoint_touches_a_session():
    assert _layer_violations("endpoints.py", endpoint_violations) == {}


def test_layer_checkers_flag_what_they_should():
    assert repository_violations("from tracking.tag.service import TagService\n") == [
        "tracking.tag.service"
    ]
    assert repository_violations("from tracking.tag import service\n") == ["tracking.tag"]
    assert repository_violations("from tracking.tag.repository import tags_field\n") == []
    assert service_violations("from sqlmodel import col, select\n") == ["sqlmodel col,select"]
    assert service_violations("from sqlalchemy.dialects.postgresql import insert\n")
    allowed = (
        "from sqlmodel.ext.asyncio.session import AsyncSession\n"
        "from sqlalchemy.exc import DBAPIError\n"
    )
    assert service_violations(allowed) == []
    endpoint = """
async def handler(request):
    async with transaction(request) as db:
        await XService(db).run()
        row = await db.get(Model, 1)
        await EventRepository(db).raw_body()

def helper(request, s: AsyncSession):
    return s.exec(query)
"""
    assert endpoint_violations(endpoint) == [
        "line 5: db.get",
        "line 6: EventRepository(...)",
        "line 9: s.exec",
    ]
    handing_on = "async def h(request):\n    async with transaction(request) as session:\n"
    handing_on += "        return await XService(session, request.state.jobs).run()\n"
    assert endpoint_violations(handing_on) == []


def _module_graph(package: Path) -> dict[str, set[str]]:
    """Each module of ``package`` and the package's modules it imports (wherever the
    import is: at the top, in a function, under ``TYPE_CHECKING``)."""
    names = {
        ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(
            ".__init__"
        ): path
        for path in sources(package)
    }
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        imported: set[str] = set()
        for module, members in _imports(parsed(path.read_text())):
            candidates = [module, *(f"{module}.{member}" for member in members)]
            imported.update(c for c in candidates if c in names and c != name)
        graph[name] = imported
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's cycles, one per strongly connected set of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                cycles.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_import_cycles_inside_a_service():
    found = {
        owner: cycles
        for owner, package in service_packages().items()
        if (cycles := import_cycles(_module_graph(package)))
    }
    assert found == {}


def test_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_modules_stay_under_the_line_limit():
    """A module over :data:`LINE_LIMIT` lines says why in its opening docstring (the
    words "over 500 lines")."""
    found = {}
    for path in sources(ROOT / "services"):
        text = path.read_text()
        if "migrations" in path.parts or text.count("\n") <= LINE_LIMIT:
            continue
        docstring = ast.get_docstring(parsed(text)) or ""
        if f"over {LINE_LIMIT} lines" not in docstring:
            found[str(path.relative_to(ROOT))] = text.count("\n")
    assert found == {}
