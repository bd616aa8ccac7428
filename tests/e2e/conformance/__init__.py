"""The stack checked against OpenAPI documents with schemathesis, through its gateway.

Three documents, each as a logged-in caller (the platform's admin; the agent server's
default account):

- ``platform`` and ``agent``: our own merged documents (``<entrypoint>/openapi.json``), in
  both modes: no 5xx, no response outside its schema, no valid request refused, no invalid
  request accepted, a 405 with ``Allow`` for a method a path does not take;
- ``reference``: ZenML 0.96.3's own document (the handbook's, read from beside the
  repository as :data:`deploy.coverage.REFERENCE` is), positive mode only, over the
  operations the platform serves (:mod:`deploy.coverage`): our answers must fit *its*
  response schemas and take every request it calls valid. (Its method checks are asked
  for too, but schemathesis probes undeclared methods only in negative mode: a 405 and
  its ``Allow`` are checked on the same paths through our platform document.)

Login and logout are left out (fuzzing them only logs the caller out), and so is every
operation our document answers with its documented 501. Failures are read from
schemathesis's JUnit report; a refusal that is a real rule a JSON Schema cannot state is
accepted only through :mod:`tests.e2e.conformance.accepted`'s tables (by operation and
check, or by an answer many operations share). A URI past the gateway's 8 KiB gets its
documented 414: a rejection, never a refusal of a valid request (:func:`config_file`).

The tests (``test_conformance_*.py``) run a bounded number of examples per operation with
a fixed seed, a document's operations dealt into shares (one test a share, by a stable
hash of each operation's name) so that the suite's workers share them out. They check a
query parameter that many operations declare alike (the filters, paging, ``hydrate``:
one implementation, :mod:`shared.listing`) on the first checked operation that declares
it, not on each of them (:attr:`Plan.coverage_schema`): our document's 1,039 query
parameters are 242 distinct ones, and generating every boundary and invalid variant of
each on every list was half of the suite's conformance time.

Identity's operations are a share of their own, last in its module: fuzzing them may
change the admin's password, which a later share would log in with. ``make conformance``
runs every document whole, with a new seed and more examples (:mod:`bench.conformance`).
"""

from __future__ import annotations

import copy
import json
import secrets
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import httpx
import pytest

from deploy import coverage
from deploy.config import load_stack
from deploy.gateway.openapi import route_owner
from tests.e2e.conformance.report import Failure, accepted, failures, grouped
from tests.support.processes import LaunchedStack, stack_for_tests

PASSWORD = f"Conform-{secrets.token_urlsafe(12)}"
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
SEED = 20261128
# Examples an operation: with every operation passing, 5 cost ~1,050 s of the suite's
# worker time (a third of it) and 3 cost ~480 s; `make conformance` runs 50.
EXAMPLES = 3
# The most operations one test checks: ~40 took 15 s on this project's 2-core machine, and
# 60 s with it loaded (a load of 9), failing early; the first test of a module also waits
# for its stack within the suite's 120 s. Past it, deal the document into more shares.
MAX_OPERATIONS = 45
PHASES = "coverage,fuzzing"
LEFT_OUT = frozenset({"/api/v1/login", "/api/v1/logout"})
OURS_CHECKS = (
    "not_a_server_error",
    "response_schema_conformance",
    "positive_data_acceptance",
    "negative_data_rejection",
    "unsupported_method",
    "allow_header_conformance",
)
REFERENCE_CHECKS = (
    "not_a_server_error",
    "response_schema_conformance",
    "positive_data_acceptance",
    "unsupported_method",
    "allow_header_conformance",
)
# The naive ISO UTC timestamps the reference's server, clients and dashboard exchange
# (tracking-api.md §0): microseconds, dropped when they are 0, and no offset.
NAIVE_TIMESTAMP = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?$"
IDENTITY = "identity"


@dataclass(frozen=True)
class Document:
    """One document schemathesis runs over: its name, the entrypoint that serves what it
    describes, the generation mode, the checks, and how many shares the tests deal its
    operations (but identity's) into."""

    name: str
    entrypoint: str
    mode: str
    checks: tuple[str, ...]
    shares: int


DOCUMENTS = {
    "platform": Document("platform", "platform", "all", OURS_CHECKS, 7),
    "agent": Document("agent", "agent", "all", OURS_CHECKS, 1),
    "reference": Document("reference", "platform", "positive", REFERENCE_CHECKS, 7),
}


@dataclass
class Target:
    """A running stack: each entrypoint's base URL and the login form of its caller."""

    urls: Mapping[str, str]
    logins: Mapping[str, Mapping[str, str]]

    def token(self, entrypoint: str) -> str:
        with httpx.Client(timeout=10, trust_env=False) as client:
            response = client.post(
                f"{self.urls[entrypoint]}/api/v1/login", data=dict(self.logins[entrypoint])
            )
        if response.status_code != 200:
            raise AssertionError(f"cannot log in to {entrypoint}: {response.text[:300]}")
        return str(response.json()["access_token"])

    def document(self, entrypoint: str) -> dict[str, Any]:
        with httpx.Client(timeout=10, trust_env=False) as client:
            response = client.get(f"{self.urls[entrypoint]}/openapi.json")
        response.raise_for_status()
        document: dict[str, Any] = response.json()
        return document


def logins(platform_password: str, agent_password: str) -> dict[str, dict[str, str]]:
    return {
        "platform": {"username": "default", "password": platform_password},
        "agent": {"grant_type": "password", "username": "default", "password": agent_password},
    }


def stack_target(stack: LaunchedStack, password: str = PASSWORD) -> Target:
    return Target(
        {name: stack.url(name, "") for name in ("platform", "agent")},
        logins(password, password),
    )


def _operations(document: Mapping[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in coverage.METHODS:
                yield method.upper(), path, operation


def unimplemented(document: Mapping[str, Any]) -> set[str]:
    """The operations ``document`` answers with its documented 501."""
    return {
        f"{method} {path}"
        for method, path, operation in _operations(document)
        if "501" in operation.get("responses", {})
    }


@cache
def served_by_platform() -> dict[str, str]:
    """``"METHOD /path"`` of each reference operation the platform serves -> its service."""
    stack = load_stack()
    found = coverage.measure(
        stack,
        coverage.reference_operations(),
        coverage.load_reasons(),
        coverage.platform_routes(stack),
    )
    return {f"{method} {path}": owner for (method, path), owner in found.served.items()}


def corrected_reference() -> dict[str, Any]:
    """The reference's document, corrected where it is known to misdescribe the wire
    (the original is never changed):

    - its response timestamps say ``format: date-time`` (RFC 3339, which needs an offset)
      while the reference's server, its clients and its dashboard exchange naive ISO UTC
      (tracking-api.md §0): in every schema a response reaches, that format becomes the
      pattern of the real wire form (a schema requests share then generates naive
      timestamps too, which the reference takes);
    - ``/health`` and ``/ready`` answer text/plain ``ok`` whatever the method
      (tracking-api.md "Health"), not the JSON string it claims: they are left out."""
    document: dict[str, Any] = json.loads(coverage.REFERENCE.read_text(encoding="utf-8"))
    for path in ("/health", "/ready"):
        document["paths"].pop(path, None)
    schemas = document.get("components", {}).get("schemas", {})
    reached = _reached(
        [op.get("responses", {}) for _, _, op in _operations(document)],
        schemas,
    )
    for name in reached:
        _naive_timestamps(schemas[name])
    for _, _, operation in _operations(document):
        _naive_timestamps(operation.get("responses", {}))
    return document


def _refs(value: object) -> Iterator[str]:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            yield ref.rsplit("/", 1)[1]
        for inner in value.values():
            yield from _refs(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _refs(inner)


def _reached(roots: Sequence[object], schemas: Mapping[str, Any]) -> set[str]:
    """The names of the component schemas ``roots`` reach through ``$ref``."""
    reached: set[str] = set()
    pending = [name for root in roots for name in _refs(root)]
    while pending:
        name = pending.pop()
        if name not in reached and name in schemas:
            reached.add(name)
            pending.extend(_refs(schemas[name]))
    return reached


def _naive_timestamps(value: object) -> None:
    if isinstance(value, dict):
        if value.get("format") == "date-time":
            del value["format"]
            value["pattern"] = NAIVE_TIMESTAMP
        for inner in value.values():
            _naive_timestamps(inner)
    elif isinstance(value, list):
        for inner in value:
            _naive_timestamps(inner)


@dataclass(frozen=True)
class Plan:
    """What one document's run covers: the document schemathesis reads, and each
    operation it checks (``"METHOD /path"``) with the service that serves it."""

    document: Document
    schema: dict[str, Any]
    owners: Mapping[str, str]

    def share(self, operation: str) -> int:
        """The share ``operation`` falls in: stable across runs and machines, unmoved when
        other operations come or go; identity's are the last share,
        :attr:`Document.shares` (see the module's docstring)."""
        if self.owners[operation] == IDENTITY:
            return self.document.shares
        return zlib.crc32(operation.encode()) % self.document.shares

    def operations(self, share: int | None = None) -> list[str]:
        return [name for name in self.owners if share is None or self.share(name) == share]

    @cached_property
    def coverage_schema(self) -> dict[str, Any]:
        """:attr:`schema` with each optional query parameter kept only on the first checked
        operation (by name) that declares it alike: the document the tests read (see the
        module's docstring)."""
        schema = copy.deepcopy(self.schema)
        first: dict[str, str] = {}
        for name in sorted(self.owners):
            method, path = name.split(" ", 1)
            operation = schema["paths"].get(path, {}).get(method.lower(), {})
            if "parameters" not in operation:
                continue
            kept = []
            for parameter in operation["parameters"]:
                if parameter.get("in") == "query" and not parameter.get("required"):
                    key = json.dumps(parameter, sort_keys=True)
                    if first.setdefault(key, name) != name:
                        continue
                kept.append(parameter)
            operation["parameters"] = kept
        return schema


def plan(target: Target, name: str) -> Plan:
    """The operations of document ``name`` that are checked on ``target``."""
    document = DOCUMENTS[name]
    ours = target.document(document.entrypoint)
    left_out = unimplemented(ours)
    if name == "reference":
        schema = corrected_reference()
        served = served_by_platform()
        owners = {op: served[op] for op in sorted(served) if op not in left_out}
    else:
        schema = ours
        stack = load_stack()
        entrypoint = stack.entrypoint(document.entrypoint)
        owners = {
            f"{method} {path}": route_owner(
                stack, entrypoint, coverage.PARAMETER.sub(coverage.SAMPLE_PARAMETER, path)
            )
            or ""
            for method, path, _ in _operations(ours)
            if f"{method} {path}" not in left_out
        }
    owners = {op: owner for op, owner in owners.items() if op.split(" ", 1)[1] not in LEFT_OUT}
    return Plan(document, schema, owners)


def config_file(directory: Path) -> Path:
    """Schemathesis's configuration: its default statuses for accepting and rejecting,
    plus 414, the gateway's documented answer to a URI over 8 KiB, which says nothing of
    whether the request was valid."""
    path = directory / "schemathesis.toml"
    path.write_text(
        "[checks.positive_data_acceptance]\n"
        'expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "414", "429", "5xx"]\n'
        "[checks.negative_data_rejection]\n"
        'expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "414", "415",'
        ' "422", "428", "429", "5xx"]\n',
        encoding="utf-8",
    )
    return path


def run(
    target: Target,
    plan: Plan,
    operations: Sequence[str],
    directory: Path,
    *,
    seed: int = SEED,
    examples: int = EXAMPLES,
    whole: bool = False,
) -> list[Failure]:
    """Schemathesis over ``operations`` of ``plan``, logged in; the failures it reports
    that :mod:`~tests.e2e.conformance.accepted` does not accept. It reads
    :attr:`Plan.coverage_schema`, or with ``whole`` (``make conformance``) the whole
    document."""
    document = plan.document
    directory.mkdir(parents=True, exist_ok=True)
    schema = directory / f"{document.name}.json"
    schema.write_text(json.dumps(plan.schema if whole else plan.coverage_schema), encoding="utf-8")
    report = directory / "junit.xml"
    token = target.token(document.entrypoint)
    process = subprocess.run(
        [
            str(SCHEMATHESIS), "--config-file", str(config_file(directory)), "run", str(schema),
            "--url", target.urls[document.entrypoint],
            "-H", f"Authorization: Bearer {token}",
            "--mode", document.mode,
            "--checks", ",".join(document.checks),
            "--phases", PHASES,
            "--max-examples", str(examples),
            "--seed", str(seed),
            "--request-timeout", "10",
            "--generation-database", "none",
            "--no-color",
            "--report", "junit", "--report-junit-path", str(report),
            *(arg for name in operations for arg in ("--include-name", name)),
        ],
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
        cwd=directory,
    )  # fmt: skip
    (directory / "schemathesis.txt").write_text(process.stdout + process.stderr, encoding="utf-8")
    if not report.exists():
        raise AssertionError(
            f"schemathesis wrote no report ({process.returncode}):\n"
            f"{process.stdout[-3000:]}\n{process.stderr[-2000:]}"
        )
    return [f for f in failures(report) if not accepted(document.name, f)]


DEALT: list[tuple[str, int]] = []
"""The (document, share) pairs of every :func:`conformance_module` made."""


def conformance_module(*shares: tuple[str, range]) -> tuple[Any, Any, Callable[..., None]]:
    """A test module's ``stack`` and ``plans`` fixtures (a stack of its own, and its
    documents' plans) and its test, one case per share of ``shares`` (document, the shares
    of it; a document's :attr:`Document.shares` is identity's), in that order: identity's
    share goes last in its module."""

    @pytest.fixture(scope="module")
    def stack(
        tmp_path_factory: pytest.TempPathFactory, databases_of_stack: dict[str, str]
    ) -> Iterator[LaunchedStack]:
        with stack_for_tests(
            tmp_path_factory,
            "conformance",
            admin_password=PASSWORD,
            extra_env={"SERVER_DEFAULT_ACCOUNT_PASSWORD": PASSWORD},
            databases=databases_of_stack,
        ) as up:
            yield up

    @pytest.fixture(scope="module")
    def plans(stack: LaunchedStack) -> dict[str, Plan]:
        target = stack_target(stack)
        return {name: plan(target, name) for name in dict.fromkeys(n for n, _ in shares)}

    dealt = [(name, share) for name, numbers in shares for share in numbers]
    DEALT.extend(dealt)
    cases = [
        pytest.param(name, share, id=f"{name}-{share_id(name, share)}") for name, share in dealt
    ]

    @pytest.mark.e2e
    @pytest.mark.parametrize(("name", "share"), cases)
    def test_conforms(
        stack: LaunchedStack, plans: dict[str, Plan], tmp_path: Path, name: str, share: int
    ) -> None:
        checked = plans[name].operations(share)
        assert checked, f"no operation of {name} falls in share {share}: deal it into fewer"
        assert len(checked) <= MAX_OPERATIONS, (
            f"share {share} of {name} has {len(checked)} operations, more than one test "
            f"checks ({MAX_OPERATIONS}): raise DOCUMENTS[{name!r}].shares"
        )
        found = run(stack_target(stack), plans[name], checked, tmp_path)
        assert not found, f"{len(found)} failures:\n{grouped(found)}"

    return stack, plans, test_conforms


def share_id(name: str, share: int) -> str:
    count = DOCUMENTS[name].shares
    return IDENTITY if share == count else f"{share + 1}of{count}"


def every_share(name: str) -> range:
    """Each share of document ``name``, identity's last when the document has it (identity
    serves the platform entrypoint only)."""
    document = DOCUMENTS[name]
    return range(document.shares + (1 if document.entrypoint == "platform" else 0))
