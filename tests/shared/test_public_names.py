"""``shared``'s public names: every module of the library declares ``__all__``, and code
outside it (the services, ``deploy/``, ``bench/`` and the tests of anything but ``shared``)
imports only names listed there. What a module leaves out of ``__all__`` is private to
``shared``: its modules may use it, and ``tests/shared/`` may test it.

Checked on the source with ``ast``: ``from shared.x import name``, and ``alias.name`` where
``alias`` is a ``shared`` module (``from shared import tracing``, ``import shared.db as db``).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "shared" / "shared"
OUTSIDE = [ROOT / "services", ROOT / "deploy", ROOT / "bench", ROOT / "tests"]
SHARED_TESTS = ROOT / "tests" / "shared"


@functools.cache
def module_path(module: str) -> Path | None:
    """The file of ``shared``'s module ``module`` (dotted), if it is one."""
    parts = module.split(".")
    if parts[0] != "shared":
        return None
    base = LIBRARY.joinpath(*parts[1:])
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def declared(path: Path) -> list[str] | None:
    """The names a module lists in ``__all__`` (``None``: it declares none)."""
    for node in ast.parse(path.read_text(), str(path)).body:
        target: ast.expr | None = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "__all__":
            assert isinstance(node, ast.Assign | ast.AnnAssign)
            assert node.value is not None
            value = ast.literal_eval(node.value)
            return list(value)
    return None


def used_names(source: str, filename: str = "<string>") -> set[tuple[str, str]]:
    """(module, name) of every ``shared`` name ``source`` imports or reads off a module."""
    if "shared" not in source:
        return set()
    tree = ast.parse(source, filename)
    used: set[tuple[str, str]] = set()
    modules: dict[str, str] = {}  # local name -> shared module it is bound to
    # One walk (the tree's nodes, kept): the imports first, then the attributes they bind.
    nodes = list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if module_path(node.module) is None:
                continue
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                if module_path(dotted) is not None:  # a submodule, used by attribute
                    modules[alias.asname or alias.name] = dotted
                else:
                    used.add((node.module, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and module_path(alias.name) is not None:
                    modules[alias.asname] = alias.name
                elif alias.name.split(".")[0] == "shared":
                    modules.setdefault("shared", "shared")
    for node in nodes:
        if isinstance(node, ast.Attribute):
            owner = _dotted(node.value, modules)
            if owner is not None and module_path(f"{owner}.{node.attr}") is None:
                used.add((owner, node.attr))
    return used


def _dotted(node: ast.expr, modules: dict[str, str]) -> str | None:
    """The ``shared`` module an expression names (``tracing``, ``shared.auth.backend``)."""
    if isinstance(node, ast.Name):
        return modules.get(node.id)
    if isinstance(node, ast.Attribute):
        parent = _dotted(node.value, modules)
        if parent is not None and module_path(f"{parent}.{node.attr}") is not None:
            return f"{parent}.{node.attr}"
    return None


def outside_sources() -> list[Path]:
    found = []
    for directory in OUTSIDE:
        for path in sorted(directory.rglob("*.py")):
            if "__pycache__" in path.parts or path.is_relative_to(SHARED_TESTS):
                continue
            found.append(path)
    return found


def library_modules() -> list[Path]:
    return sorted(p for p in LIBRARY.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_shared_module_declares_all():
    missing = [str(p.relative_to(ROOT)) for p in library_modules() if declared(p) is None]
    assert missing == []


def test_every_name_in_all_is_defined():
    undefined = {}
    for path in library_modules():
        module = ".".join(path.relative_to(LIBRARY.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        names = declared(path) or []
        imported = __import__(module, fromlist=["*"])
        gone = [name for name in names if not hasattr(imported, name)]
        if gone:
            undefined[module] = gone
    assert undefined == {}


def test_code_outside_shared_uses_only_its_public_names():
    private: dict[str, list[str]] = {}
    for path in outside_sources():
        for module, name in used_names(path.read_text(), str(path)):
            source = module_path(module)
            assert source is not None  # used_names keeps the names of shared's modules only
            listed = declared(source)
            if listed is None or name not in listed:
                private.setdefault(str(path.relative_to(ROOT)), []).append(f"{module}.{name}")
    assert private == {}


def test_checker_sees_imports_and_module_attributes():
    source = (
        "from shared.errors import NotFound\n"
        "from shared import tracing\n"
        "import shared.db as db\n"
        "import shared.redis_pipe\n"
        "tracing.tracer\n"
        "db.session_scope\n"
        "shared.redis_pipe.DIRECT\n"
    )
    assert used_names(source) == {
        ("shared.errors", "NotFound"),
        ("shared.tracing", "tracer"),
        ("shared.db", "session_scope"),
        ("shared.redis_pipe", "DIRECT"),
    }


def test_checker_ignores_other_packages():
    assert used_names("from starlette.routing import Route\nimport os\nos.path\n") == set()
