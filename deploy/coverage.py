"""The platform entrypoint's coverage of ZenML 0.96.3's API: ``docs/api-coverage.md``.

Every operation (method and path) of the reference's OpenAPI document is *served* when the
gateway routes its path to a service (``deploy/stack.toml``) whose app has a route that
takes that method on that path; otherwise it is *not served*, and the one reason given
for it lives in ``deploy/coverage.toml`` (path prefixes of the reference's paths, or
``"METHOD /path"`` for one operation; the longest key that matches wins).

``python -m deploy.coverage`` rewrites the page; ``--check`` only compares (exit 1 when the
page differs, an operation has neither route nor reason, or a reason matches nothing
unserved). ``tests/deploy/test_api_coverage.py`` runs the same check, so the page follows
the code: a family served by a new route leaves its reason stale until it is removed.

The reference document is the handbook's (``../shared/reference`` beside the repository),
read, never copied. The services' apps are built in this process, without their lifespan
(no database, Redis or running service), as the gateway's docs builder does.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.routing import BaseRoute, Match

from deploy.config import DEFAULT_STACK_FILE, Stack, load_stack
from deploy.gateway.docs import service_app
from deploy.gateway.openapi import route_owner

REPO_ROOT = Path(__file__).resolve().parents[1]
REFERENCE = REPO_ROOT.parent / "shared" / "reference" / "zenml-0.96.3-openapi.json"
REASONS = Path(__file__).resolve().parent / "coverage.toml"
PAGE = REPO_ROOT / "docs" / "api-coverage.md"
ENTRYPOINT = "platform"
METHODS = ("get", "put", "post", "patch", "delete")
# What a path parameter is filled with to route a reference path: a UUID is taken by
# every converter the services use (uuid and str) and by the gateway's prefixes alike.
SAMPLE_PARAMETER = "3f2a9c1e-0b7d-4e52-9a61-7c8d2e4f5a10"
PARAMETER = re.compile(r"\{[^}/]+\}")
NO_REASON = "no reason given (deploy/coverage.toml)"


class CoverageError(Exception):
    """The reference document or the reasons file cannot be read."""


@dataclass(frozen=True)
class Coverage:
    """Each reference operation's line: ``(method, path) -> service name`` when served, else
    the reason; and the reasons' keys that name no unserved operation, and the unserved
    operations no key names."""

    served: Mapping[tuple[str, str], str]
    unserved: Mapping[tuple[str, str], str]
    stale_reasons: Sequence[str]
    unexplained: Sequence[tuple[str, str]]


def reference_operations(path: Path = REFERENCE) -> list[tuple[str, str]]:
    """``(METHOD, path)`` of every operation of the reference document, sorted by path."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CoverageError(f"cannot read the reference document {path}: {exc}") from None
    operations = {
        (method.upper(), name)
        for name, item in document["paths"].items()
        for method in item
        if method in METHODS
    }
    return sorted(operations, key=lambda operation: (operation[1], operation[0]))


def load_reasons(path: Path = REASONS) -> dict[str, str]:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CoverageError(f"cannot read {path}: {exc}") from None
    reasons = raw.get("reasons")
    if not isinstance(reasons, dict) or not all(isinstance(v, str) for v in reasons.values()):
        raise CoverageError(f"{path}: [reasons] maps a prefix to one sentence")
    return reasons


def _reason_key(reasons: Iterable[str], method: str, path: str) -> str | None:
    """The longest key naming ``method path``: ``"/prefix"`` or ``"METHOD /prefix"``."""
    best: tuple[int, str] | None = None
    for key in reasons:
        key_method, _, prefix = key.rpartition(" ")
        if key_method and key_method != method:
            continue
        if path == prefix or path.startswith(f"{prefix}/"):
            rank = len(prefix) * 2 + (1 if key_method else 0)
            if best is None or rank > best[0]:
                best = (rank, key)
    return None if best is None else best[1]


def _match(routes: Sequence[BaseRoute], method: str, path: str) -> Match:
    """How well a route of ``routes`` takes ``method path``: FULL, PARTIAL (the path but
    not the method: a 405) or NONE (a 404)."""
    scope: dict[str, Any] = {"type": "http", "method": method, "path": path, "root_path": ""}
    matches = {route.matches(scope)[0] for route in routes}
    return next((m for m in (Match.FULL, Match.PARTIAL) if m in matches), Match.NONE)


def _answer(owner: str | None, unimplemented: bool, match: Match) -> str:
    """Who answers an unserved operation, and with what."""
    if owner is None:
        return "gateway 501" if unimplemented else "gateway 404"
    return f"{owner} {405 if match is Match.PARTIAL else 404}"


def measure(
    stack: Stack,
    operations: Sequence[tuple[str, str]],
    reasons: Mapping[str, str],
    service_routes: Mapping[str, Sequence[BaseRoute]],
) -> Coverage:
    """Which operations the entrypoint's gateway routes and services serve (pure: the
    services' routes are given, by service name)."""
    entrypoint = stack.entrypoint(ENTRYPOINT)
    served: dict[tuple[str, str], str] = {}
    unserved: dict[tuple[str, str], str] = {}
    used: set[str] = set()
    unexplained: list[tuple[str, str]] = []
    for method, path in operations:
        concrete = PARAMETER.sub(SAMPLE_PARAMETER, path)
        owner = route_owner(stack, entrypoint, concrete)
        match = _match(service_routes.get(owner, ()) if owner else (), method, concrete)
        if match is Match.FULL:
            served[(method, path)] = owner or ""
            continue
        key = _reason_key(reasons, method, path)
        if key is None:
            unexplained.append((method, path))
            continue
        used.add(key)
        unimplemented = any(
            concrete == p or concrete.startswith(f"{p}/") for p in entrypoint.unimplemented
        )
        unserved[(method, path)] = f"({_answer(owner, unimplemented, match)}): {reasons[key]}"
    stale = sorted(set(reasons) - used)
    return Coverage(served, unserved, stale, unexplained)


def platform_routes(stack: Stack) -> dict[str, Sequence[BaseRoute]]:
    """Each platform web service's routes, from its app (service name -> routes); a
    service whose module builds no service app (not written yet) serves nothing."""
    routes: dict[str, Sequence[BaseRoute]] = {}
    for service in stack.web_services:
        if service.entrypoint == ENTRYPOINT:
            try:
                routes[service.name] = service_app(service.module).routes
            except LookupError:
                routes[service.name] = ()
    return routes


def render(coverage: Coverage, operations: Sequence[tuple[str, str]]) -> str:
    total = len(operations)
    lines = [
        "# API coverage: ZenML 0.96.3",
        "",
        "<!-- Written by `python -m deploy.coverage`; tests/deploy/test_api_coverage.py fails",
        "     when it differs from what the code serves. Do not edit by hand: a reason lives",
        "     in deploy/coverage.toml, a route in a service and deploy/stack.toml. -->",
        "",
        "Every operation of ZenML 0.96.3's OpenAPI document (the handbook's",
        "`reference/zenml-0.96.3-openapi.json`) on the platform entrypoint: served (by the",
        "service the gateway routes it to) or not, and why. An operation not served answers",
        "what the parentheses say: the gateway's 501 (`NotImplementedError`, a family listed",
        "as unimplemented in `deploy/stack.toml`) or 404, or the 404 or 405 of the service",
        "the gateway routes it to.",
        "",
        f"Served: {len(coverage.served)} of {total}. Not served: {len(coverage.unserved)}.",
        "",
        "| method | path | served |",
        "|---|---|---|",
    ]
    for method, path in operations:
        owner = coverage.served.get((method, path))
        reason = coverage.unserved.get((method, path), f": {NO_REASON}")
        cell = f"served ({owner})" if owner else f"not served {reason}"
        lines.append(f"| {method} | `{path}` | {cell} |")
    return "\n".join(lines) + "\n"


def problems(coverage: Coverage) -> list[str]:
    found = [f"{m} {p}: neither served nor given a reason" for m, p in coverage.unexplained]
    found += [f"reason {key!r} names no unserved operation" for key in coverage.stale_reasons]
    return found


def build(stack_file: Path = DEFAULT_STACK_FILE) -> tuple[str, list[str]]:
    """The page as the code and the reference make it, and what is wrong with the reasons."""
    stack = load_stack(stack_file)
    operations = reference_operations()
    coverage = measure(stack, operations, load_reasons(), platform_routes(stack))
    return render(coverage, operations), problems(coverage)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.coverage", description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare only, write nothing")
    args = parser.parse_args(argv)
    try:
        page, found = build()
    except CoverageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for problem in found:
        print(f"error: {problem}", file=sys.stderr)
    current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
    if args.check:
        if current != page:
            print(f"error: {PAGE.relative_to(REPO_ROOT)} is stale", file=sys.stderr)
            return 1
    elif current != page:
        PAGE.write_text(page, encoding="utf-8")
        print(f"wrote {PAGE.relative_to(REPO_ROOT)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
