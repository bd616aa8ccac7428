"""Tracking API throughput: the ZenML 0.96.3 server against ours, side by side, same run.

    uv run python bench/tracking.py                  # the reference, ours x1 and x2, defaults
    uv run python bench/tracking.py --only reference --requests 100 --time-cap 10
    uv run python bench/tracking.py --workloads create,list,get,filter,versions,scaling
    uv run python bench/tracking.py --database-url postgresql://postgres@127.0.0.1:5432/postgres

Starts the reference (``zenml[server]==0.96.3`` from the cached environment of
``tests/support/zenml_env.py``: uvicorn on 127.0.0.1, on MariaDB, a database made for the
run, see ``bench/mariadb.py``, or with ``--reference-database sqlite`` its own SQLite file)
and our local stack once per ``--replicas`` count (``python -m deploy.local --replicas
tracking=N`` with a temporary data dir on shifted ports, nginx gateway spreading requests
over the N tracking processes, PostgreSQL: the launcher's embedded server, or with
``--database-url`` a new database per service on that server, see ``bench/postgres.py``),
logs in to each as ``default``, loads the same artifacts into each (``--rows``, concurrent
POSTs), warms up, prints each server's idle memory by process (``bench/memory.py``), then
measures through each front door: sequentially (one keep-alive connection) and with
``--concurrency`` clients (one connection each), for

    create   POST /api/v1/artifacts                   (a unique name each)
    list     GET  /api/v1/artifacts?size=50
    get      GET  /api/v1/artifacts/{id}?hydrate=true
    filter   GET  /api/v1/artifacts?name=contains:bench-1&sort_by=desc:created&size=50
    secrets  GET  /api/v1/secrets?size=50&sort_by=created   (over ``--secrets`` secrets,
                  loaded with POST /api/v1/secrets, two values each; only when chosen)
    secret   GET  /api/v1/secrets/{id}                      (one with its values)
    versions GET  /api/v1/artifact_versions?artifact=bench-v-<n>&type=ModelArtifact
                  &version_number=gte:<half>&sort_by=desc:created&size=50
                  (over ``--versions`` versions of ``--version-artifacts`` artifacts: the
                  first ``--api-versions`` loaded with ``POST /artifact_versions/batch``,
                  the rest copied in by SQL, see ``bench/scaling.py``; only when chosen)
    scaling  the plain and the filtered versions list, p50/p95 at each of
             ``--scaling-sizes`` versions, on fresh servers after the rest (the reference
             and ours with the fewest replicas; see ``bench/scaling.py``)

The read workloads run first (so every server holds exactly ``--rows`` artifacts), creates
last; each cell is measured on every server in turn, interleaved. The sender is wrk when it
is installed, else one asyncio process (uvloop when installed); it shares the 2 cores with
the servers: its own CPU per request is printed beside each result, and a cell whose sender
used most of a core is marked client-bound (the server may be faster than shown). All
processes are stopped on exit, Ctrl-C and SIGTERM included.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import math
import os
import secrets
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlencode

REPO_ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: import from the repo root, not from bench/
    sys.path[0] = str(REPO_ROOT)

import asyncpg  # noqa: E402
import httpx  # noqa: E402

from bench import mariadb, memory, postgres, scaling, wrk  # noqa: E402
from tests.support.processes import (  # noqa: E402
    LaunchedStack,
    StackStartError,
    launch_stack,
    port_free,
)
from tests.support.zenml_env import (  # noqa: E402
    ZENML_VERSION,
    ZenmlEnvError,
    installed_versions,
    server_venv,
)

TARGETS = ("reference", "ours")
WORKLOADS = ("create", "list", "get", "filter", "versions", "secrets", "secret", "scaling")
# Loading 100,000 versions into the reference takes a while: ask for it with --workloads.
DEFAULT_WORKLOADS = ("create", "list", "get", "filter")
# Reads on exactly --rows rows, creates last.
RUN_ORDER = ("list", "get", "filter", "versions", "secrets", "secret", "create")
WORKLOAD_TITLES = {
    "create": "create artifact",
    "list": "list size=50",
    "get": "get hydrated",
    "filter": "list filtered",
    "versions": "versions 3 filters",
    "secrets": "secrets size=50",
    "secret": "get secret",
}
SECRET_WORKLOADS = ("secrets", "secret")
SCALE_SECONDS = 5.0  # per list and size in the scaling workload, after 1 s of warm-up
DEFAULT_REPLICAS = (1, 2)
VERSION_TYPES = ("DataArtifact", "ModelArtifact")
LOAD_WRITERS = 2  # the reference's SQLite takes writers in turn: more only queue and time out
LOAD_TIMEOUT = 600.0  # seconds for one batch of versions (the reference takes ~20 ms each)
MATERIALIZER = {
    "module": "zenml.materializers.built_in_materializer",
    "attribute": "BuiltInMaterializer",
    "type": "internal",
}
DATA_TYPE = {"module": "builtins", "attribute": "int", "type": "builtin"}
FILTER_NAME = "contains:bench-1"
TAGS = [f"group-{n}" for n in range(5)]
CLIENT_BOUND_CPU = 0.85  # sender CPU seconds per wall second above which a cell is suspect
IDLE_SETTLE = 2.0  # seconds at rest before the idle memory is read


class BenchError(Exception):
    """A failure that ends the run with one line (no traceback)."""


# ---------------------------------------------------------------------------------------------
# Options


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options; argparse exits with status 2 and a usage line on bad input."""
    parser = argparse.ArgumentParser(
        prog="bench/tracking.py",
        description="Tracking API throughput: ZenML 0.96.3 (reference) against our stack.",
    )
    parser.add_argument(
        "--requests",
        type=_positive,
        default=300,
        help="sequential requests per workload (default: %(default)s)",
    )
    parser.add_argument(
        "--concurrent-requests",
        type=_positive,
        default=2000,
        help="requests per workload with --concurrency clients (default: %(default)s)",
    )
    parser.add_argument(
        "--concurrency",
        type=_positive,
        default=16,
        help="concurrent clients, one connection each (default: %(default)s)",
    )
    parser.add_argument(
        "--time-cap",
        type=_positive_float,
        default=20.0,
        help="seconds at most per measurement (default: %(default)s)",
    )
    parser.add_argument(
        "--warmup",
        type=_non_negative,
        default=30,
        help="untimed requests before each measurement (default: %(default)s)",
    )
    parser.add_argument(
        "--rows",
        type=_positive,
        default=1000,
        help="artifacts loaded into each server first (default: %(default)s)",
    )
    parser.add_argument(
        "--versions",
        type=_positive,
        default=100_000,
        help="artifact versions loaded for the versions workload (default: %(default)s)",
    )
    parser.add_argument(
        "--secrets",
        type=_positive,
        default=10_000,
        help="secrets loaded for the secrets workloads (default: %(default)s)",
    )
    parser.add_argument(
        "--version-artifacts",
        type=_positive,
        default=100,
        help="artifacts those versions spread over (default: %(default)s)",
    )
    parser.add_argument(
        "--batch",
        type=_positive,
        default=500,
        help="versions per batch-create request while loading (default: %(default)s)",
    )
    parser.add_argument(
        "--repeat",
        type=_positive,
        default=1,
        help="measure every cell N times, report the median run by req/s (default: %(default)s)",
    )
    parser.add_argument("--only", choices=TARGETS, help="measure one server only")
    parser.add_argument(
        "--replicas",
        type=_counts,
        default=list(DEFAULT_REPLICAS),
        help="our stack once per count, with that many tracking processes behind the "
        "gateway, all in the same run (default: 1,2)",
    )
    parser.add_argument(
        "--workloads",
        type=_workloads,
        default=list(DEFAULT_WORKLOADS),
        help=f"comma-separated subset of {','.join(WORKLOADS)} "
        f"(default: {','.join(DEFAULT_WORKLOADS)})",
    )
    parser.add_argument(
        "--zenml-headers",
        action="store_true",
        help="send what the zenml client sends on every request "
        "(Idempotency-Key, X-Request-ID, User-Agent, Source-Context)",
    )
    parser.add_argument(
        "--sender",
        choices=("wrk", "python"),
        default="wrk" if wrk.available() else "python",
        help="load generator: wrk (C, ~0.05 ms of CPU per request; the default when it is "
        "installed) or this process (httpx, ~1 ms per request) (default: %(default)s)",
    )
    postgres.add_option(parser)
    mariadb.add_option(parser)
    scaling.add_options(parser)
    parser.add_argument(
        "--keep",
        action="store_true",
        help="leave the servers' data dirs (and logs) and our databases after the run",
    )
    parser.add_argument(
        "--data-dir", type=Path, help="where to put the data dirs (default: a new temporary dir)"
    )
    args = parser.parse_args(argv)
    if args.sender == "wrk" and args.zenml_headers:
        parser.error("--zenml-headers needs --sender python (a fresh Idempotency-Key each)")
    return args


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a positive number: {text!r}")
    return value


def _counts(text: str) -> list[int]:
    """``1,2``: distinct replica counts, ascending (an argparse type)."""
    counts = sorted({_positive(part.strip()) for part in text.split(",") if part.strip()})
    if not counts:
        raise argparse.ArgumentTypeError(f"no replica count in {text!r}")
    return counts


def _workloads(text: str) -> list[str]:
    picked = [w.strip() for w in text.split(",") if w.strip()]
    unknown = [w for w in picked if w not in WORKLOADS]
    if unknown or not picked:
        raise argparse.ArgumentTypeError(
            f"unknown workload(s) {', '.join(unknown) or '(none given)'}; "
            f"choose from {','.join(WORKLOADS)}"
        )
    return [w for w in WORKLOADS if w in picked]


# ---------------------------------------------------------------------------------------------
# Results and the table


@dataclass
class Stats:
    """One measured cell: a workload, a mode, a server."""

    requests: int
    seconds: float
    latencies: list[float] = field(repr=False)
    errors: int = 0
    first_error: str = ""
    client_cpu: float = 0.0  # seconds of the sender's CPU during the measurement
    fixed: tuple[float, float] | None = None  # (p50, p99) in seconds, when the sender gave them

    @property
    def ok(self) -> int:
        return self.requests - self.errors

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    @property
    def p50_ms(self) -> float:
        return (self.fixed[0] if self.fixed else percentile(self.latencies, 50)) * 1000

    @property
    def p99_ms(self) -> float:
        return (self.fixed[1] if self.fixed else percentile(self.latencies, 99)) * 1000

    @property
    def client_ms(self) -> float:
        """The sender's CPU per request, in ms."""
        return self.client_cpu / self.requests * 1000 if self.requests else 0.0

    @property
    def client_bound(self) -> bool:
        return self.seconds > 0 and self.client_cpu / self.seconds > CLIENT_BOUND_CPU


@dataclass
class Row:
    """One line of the table: each server's side, ``None`` when not measured, a string when
    it failed (``sides`` by target name, in the table's order)."""

    workload: str
    mode: str
    sides: dict[str, Stats | str | None] = field(default_factory=dict)


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _cells(side: Stats | str | None) -> list[str]:
    if side is None:
        return ["-", "-", "-", "-"]
    if isinstance(side, str):
        return ["failed", "", "", ""]
    return [f"{side.rps:.1f}", f"{side.p50_ms:.1f}", f"{side.p99_ms:.1f}", f"{side.client_ms:.2f}"]


def short_name(name: str) -> str:
    """A target's name in the table's headers."""
    return "ref" if name == "reference" else name


def format_table(rows: Sequence[Row], names: Sequence[str] = ("reference", "ours")) -> str:
    """The results as an aligned text table, a group of columns per target in ``names``
    and each of ours' ratio to the reference, with notes (errors, client-bound cells)
    below."""
    ours = [name for name in names if name != "reference"]
    header = ["workload", "mode"]
    for name in names:
        short = short_name(name)
        header += [f"{short} req/s", f"{short} p50 ms", f"{short} p99 ms", f"{short} cli ms"]
    if "reference" in names:
        header += [f"{short_name(name)}/ref" for name in ours]
    body: list[list[str]] = []
    notes: list[str] = []
    for row in rows:
        cells = [row.workload, row.mode]
        for name in names:
            cells += _cells(row.sides.get(name))
        if "reference" in names:
            cells += [ratio(row.sides.get("reference"), row.sides.get(name)) for name in ours]
        body.append(cells)
        for name in names:
            side = row.sides.get(name)
            where = f"{row.workload}, {row.mode}, {name}"
            if isinstance(side, str):
                notes.append(f"{where}: {side}")
            elif isinstance(side, Stats):
                if side.errors:
                    notes.append(
                        f"{where}: {side.errors}/{side.requests} errors, first: {side.first_error}"
                    )
                if side.client_bound:
                    notes.append(
                        f"{where}: client-bound (the sender used "
                        f"{side.client_cpu / side.seconds:.0%} of a core)"
                    )
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        left = [cells[i].ljust(widths[i]) for i in range(2)]
        right = [cells[i].rjust(widths[i]) for i in range(2, len(cells))]
        return "  ".join(left + right).rstrip()

    out = [line(header), "  ".join("-" * w for w in widths)]
    out += [line(cells) for cells in body]
    if notes:
        out += ["", "notes:", *(f"  - {note}" for note in notes)]
    return "\n".join(out)


def ratio(reference: Stats | str | None, ours: Stats | str | None) -> str:
    """Ours' throughput over the reference's (``-`` unless both were measured)."""
    if isinstance(reference, Stats) and isinstance(ours, Stats) and reference.rps > 0:
        return f"{ours.rps / reference.rps:.2f}x"
    return "-"


def median_run(runs: Sequence[Stats | str]) -> Stats | str:
    """The run with the median req/s (a failure if every run failed)."""
    measured = [r for r in runs if isinstance(r, Stats)]
    if not measured:
        return runs[-1]
    ordered = sorted(measured, key=lambda s: s.rps)
    return ordered[(len(ordered) - 1) // 2]


# ---------------------------------------------------------------------------------------------
# Talking to a server


@dataclass
class Target:
    """A logged-in server: where, who, and the artifacts loaded into it."""

    name: str
    base_url: str
    token: str
    project_id: str
    server_stack: str
    artifact_ids: list[str] = field(default_factory=list)
    secret_ids: list[str] = field(default_factory=list)
    names: Iterator[int] = field(default_factory=itertools.count)
    run_tag: str = field(default_factory=lambda: secrets.token_hex(3))
    processes: dict[str, int] = field(default_factory=dict)  # name -> the pgid it leads
    # Versions (start, stop, artifacts) written by SQL; None: through the API only.
    copy_versions: Callable[[int, int, int], Awaitable[None]] | None = None
    # Where its data is, for loads by SQL: ours, tracking's PostgreSQL URL; the
    # reference, its MariaDB store and the interpreter that administers it.
    database_url: str = ""
    reference_store: tuple[Path, mariadb.ReferenceStore] | None = None


def describe_http_error(response: httpx.Response) -> str:
    body = response.text.replace("\n", " ")[:300]
    return f"{response.request.method} {response.request.url.path} -> {response.status_code} {body}"


def login(name: str, base_url: str, password: str, server_stack: str) -> Target:
    """Log in as ``default`` (password grant) and find the default project."""
    with httpx.Client(base_url=base_url, timeout=30.0, trust_env=False) as http:
        response = http.post("/api/v1/login", data={"username": "default", "password": password})
        if response.status_code != 200:
            raise BenchError(f"{name}: login failed: {describe_http_error(response)}")
        token = response.json()["access_token"]
        http.cookies.clear()
        headers = {"Authorization": f"Bearer {token}"}
        response = http.get("/api/v1/projects", params={"name": "default"}, headers=headers)
        if response.status_code != 200 or not response.json().get("items"):
            raise BenchError(f"{name}: no default project: {describe_http_error(response)}")
        project_id = str(response.json()["items"][0]["id"])
    return Target(name, base_url, token, project_id, server_stack)


def zenml_headers() -> dict[str, str]:
    """What the zenml client adds to every request (see tracking-api.md)."""
    return {
        "User-Agent": f"zenml/{ZENML_VERSION}",
        "Source-Context": "python",
        "X-Request-ID": secrets.token_hex(4),
        "Idempotency-Key": str(uuid.uuid4()),
    }


Request = tuple[
    str, str, dict[str, Any] | None, dict[str, Any] | list[Any] | None
]  # method, path, params, json


def make_request(
    target: Target, workload: str, index: int, args: argparse.Namespace | None = None
) -> Request:
    """The ``index``-th request of ``workload`` against ``target``."""
    if workload == "create":
        name = f"created-{target.run_tag}-{next(target.names)}"
        return "POST", "/api/v1/artifacts", None, {"project": target.project_id, "name": name}
    base = {
        "hydrate": "false",
        "logical_operator": "and",
        "page": "1",
        "size": "50",
        "project": target.project_id,
    }
    if workload == "list":
        return "GET", "/api/v1/artifacts", {**base, "sort_by": "created"}, None
    if workload == "get":
        artifact_id = target.artifact_ids[index % len(target.artifact_ids)]
        return "GET", f"/api/v1/artifacts/{artifact_id}", {"hydrate": "true"}, None
    if workload == "filter":
        return (
            "GET",
            "/api/v1/artifacts",
            {**base, "name": FILTER_NAME, "sort_by": "desc:created"},
            None,
        )
    if workload == "versions":
        assert args is not None
        return versions_request(target, index, args.versions, args.version_artifacts)
    if workload == "secrets":
        params = {key: base[key] for key in ("hydrate", "logical_operator", "page", "size")}
        return "GET", "/api/v1/secrets", {**params, "sort_by": "created"}, None
    if workload == "secret":
        secret_id = target.secret_ids[index % len(target.secret_ids)]
        return "GET", f"/api/v1/secrets/{secret_id}", None, None
    raise ValueError(f"unknown workload {workload!r}")  # pragma: no cover


def versions_request(target: Target, index: int, versions: int, artifacts: int) -> Request:
    """The filtered versions list on artifact ``index`` with ``versions`` loaded over
    ``artifacts`` artifacts: its models from half of its versions on, newest first."""
    params = {
        "hydrate": "false",
        "logical_operator": "and",
        "page": "1",
        "size": "50",
        "project": target.project_id,
        "artifact": f"bench-v-{index % artifacts}",
        "type": VERSION_TYPES[1],
        "version_number": f"gte:{versions // artifacts // 2}",
        "sort_by": "desc:created",
    }
    return "GET", "/api/v1/artifact_versions", params, None


def _clients(target: Target, count: int, timeout: float = 60.0) -> list[httpx.AsyncClient]:
    """``count`` clients with one keep-alive connection each (a shared pool costs 3x CPU)."""
    return [
        httpx.AsyncClient(
            base_url=target.base_url,
            headers={"Authorization": f"Bearer {target.token}"},
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            timeout=httpx.Timeout(timeout),
            trust_env=False,
        )
        for _ in range(count)
    ]


async def drive(
    clients: Sequence[httpx.AsyncClient],
    total: int,
    make: Callable[[int], Request],
    *,
    time_cap: float,
    extra_headers: Callable[[], dict[str, str]] | None = None,
    on_response: Callable[[httpx.Response], None] | None = None,
) -> Stats:
    """Send ``total`` requests (or until ``time_cap``) over ``clients``, one in flight each."""
    counter = itertools.count()
    latencies: list[float] = []
    errors = 0
    first_error = ""
    deadline = time.perf_counter() + time_cap

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal errors, first_error
        while True:
            index = next(counter)
            if index >= total or time.perf_counter() > deadline:
                return
            method, path, params, body = make(index)
            headers = extra_headers() if extra_headers else None
            started = time.perf_counter()
            try:
                response = await client.request(
                    method, path, params=params, json=body, headers=headers
                )
            except httpx.HTTPError as exc:
                latencies.append(time.perf_counter() - started)
                errors += 1
                first_error = first_error or f"{method} {path}: {type(exc).__name__}: {exc}"
                continue
            latencies.append(time.perf_counter() - started)
            if response.status_code >= 400:
                errors += 1
                first_error = first_error or describe_http_error(response)
            elif on_response is not None:
                on_response(response)

    cpu_started = time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(worker(client) for client in clients))
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    return Stats(len(latencies), seconds, latencies, errors, first_error, cpu)


async def load_rows(target: Target, rows: int, concurrency: int) -> None:
    """Create ``rows`` artifacts named ``bench-<n>`` with one of five tags, concurrently.

    The first five go one by one, so every tag exists before concurrent requests share it.
    """
    clients = _clients(target, concurrency)
    ids: dict[int, str] = {}

    def make(index: int) -> Request:
        body = {
            "project": target.project_id,
            "name": f"bench-{index}",
            "tags": [TAGS[index % len(TAGS)]],
        }
        return "POST", "/api/v1/artifacts", None, body

    def keep(response: httpx.Response) -> None:
        data = response.json()
        ids[int(data["name"].removeprefix("bench-"))] = str(data["id"])

    try:
        first = min(len(TAGS), rows)
        stats = await drive(clients[:1], first, make, time_cap=600, on_response=keep)
        if stats.errors == 0 and rows > first:
            stats = await drive(
                clients, rows - first, lambda i: make(i + first), time_cap=1800, on_response=keep
            )
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))
    if stats.errors:
        raise BenchError(f"{target.name}: loading failed: {stats.first_error}")
    target.artifact_ids = [ids[i] for i in sorted(ids)]
    async with _clients(target, 1)[0] as http:
        response = await http.get("/api/v1/artifacts", params={"size": "1"})
    if response.status_code != 200 or response.json().get("total", 0) < rows:
        raise BenchError(f"{target.name}: after loading: {describe_http_error(response)}")


async def load_secrets(target: Target, count: int, concurrency: int) -> None:
    """Create ``count`` public secrets named ``bench-s-<n>``, two values each,
    concurrently (a secret's values are encrypted one by one on both servers)."""
    clients = _clients(target, concurrency)
    ids: list[str] = []

    def make(index: int) -> Request:
        values = {"user": f"user-{index}", "password": secrets.token_urlsafe(16)}
        return "POST", "/api/v1/secrets", None, {"name": f"bench-s-{index}", "values": values}

    try:
        stats = await drive(
            clients,
            count,
            make,
            time_cap=3600,
            on_response=lambda response: ids.append(str(response.json()["id"])),
        )
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))
    if stats.errors:
        raise BenchError(f"{target.name}: loading secrets failed: {stats.first_error}")
    target.secret_ids = ids


def version_body(target: Target, index: int, artifacts: int) -> dict[str, Any]:
    """The ``index``-th version: artifact ``index % artifacts``, an explicit number (so
    concurrent batches never race for one), half of each artifact's versions models."""
    number = index // artifacts + 1
    return {
        "project": target.project_id,
        "artifact_name": f"bench-v-{index % artifacts}",
        "version": number,
        "type": VERSION_TYPES[number % 2],
        "uri": f"/bench/{index}",
        "materializer": MATERIALIZER,
        "data_type": DATA_TYPE,
        "save_type": "external",
    }


async def load_versions(
    target: Target, args: argparse.Namespace, start: int = 0, stop: int | None = None
) -> None:
    """Versions ``start`` to ``stop`` (``--versions``) in batches of ``--batch``,
    concurrently; from 0, the first batch alone creates every artifact, so concurrent
    batches only add versions."""
    stop = args.versions if stop is None else stop
    first = start // args.batch
    batches = -(-stop // args.batch) - first
    clients = _clients(target, min(args.concurrency, LOAD_WRITERS), timeout=LOAD_TIMEOUT)

    def make(batch: int) -> Request:
        begin = max(start, (first + batch) * args.batch)
        end = min((first + batch + 1) * args.batch, stop)
        bodies = [version_body(target, i, args.version_artifacts) for i in range(begin, end)]
        return "POST", "/api/v1/artifact_versions/batch", None, bodies

    try:
        alone = 1 if start == 0 else 0
        stats = await drive(clients[:1], alone, make, time_cap=3600)
        if stats.errors == 0 and batches > alone:
            stats = await drive(clients, batches - alone, lambda b: make(b + alone), time_cap=7200)
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))
    if stats.errors:
        raise BenchError(f"{target.name}: loading versions failed: {stats.first_error}")
    async with _clients(target, 1)[0] as http:
        response = await http.get("/api/v1/artifact_versions", params={"size": "1"})
    if response.status_code != 200 or response.json().get("total", 0) < stop:
        raise BenchError(f"{target.name}: after loading versions: {describe_http_error(response)}")


async def measure(
    target: Target, workload: str, concurrency: int, total: int, args: argparse.Namespace
) -> Stats | str:
    """One cell: warm-up over the same connections, then the timed run."""
    if args.sender == "wrk":
        return await asyncio.to_thread(measure_with_wrk, target, workload, concurrency, total, args)
    clients = _clients(target, concurrency)
    extra = zenml_headers if args.zenml_headers else None

    def make(index: int) -> Request:
        return make_request(target, workload, index, args)

    try:
        if args.warmup:
            warm = await drive(
                clients,
                max(args.warmup, concurrency),
                make,
                time_cap=args.time_cap,
                extra_headers=extra,
            )
            if warm.errors == warm.requests:
                return f"every warm-up request failed; first: {warm.first_error}"
        return await drive(clients, total, make, time_cap=args.time_cap, extra_headers=extra)
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))


def wrk_requests(
    target: Target, workload: str, args: argparse.Namespace | None = None
) -> list[wrk.WrkRequest]:
    """The requests of ``workload`` for wrk to cycle through (``{n}``: a unique number):
    every loaded artifact for ``get``, every versioned artifact for ``versions`` (which
    needs ``args``, as :func:`make_request`)."""
    if workload == "create":
        body = json.dumps({"project": target.project_id, "name": f"created-{target.run_tag}-"})
        return [wrk.WrkRequest("POST", "/api/v1/artifacts", body.replace('-"}', '-{n}"}'))]
    count = 1
    if workload == "get":
        count = len(target.artifact_ids)
    elif workload == "secret":
        count = len(target.secret_ids)
    elif workload == "versions" and args is not None:
        count = args.version_artifacts
    requests = []
    for index in range(count):
        method, path, params, _ = make_request(target, workload, index, args)
        query = f"?{urlencode(params)}" if params else ""
        requests.append(wrk.WrkRequest(method, path + query))
    return requests


def measure_with_wrk(
    target: Target, workload: str, concurrency: int, total: int, args: argparse.Namespace
) -> Stats | str:
    """One cell with wrk: a short warm-up, then ``--time-cap`` seconds (``total == 0``:
    the warm-up only)."""
    requests = wrk_requests(target, workload, args)
    headers = {"Authorization": f"Bearer {target.token}"}
    try:
        wrk.run(target.base_url, requests, connections=concurrency, seconds=2, headers=headers)
        if total == 0:
            return "warm-up only"
        result = wrk.run(
            target.base_url,
            requests,
            connections=concurrency,
            seconds=args.time_cap,
            headers=headers,
        )
    except wrk.WrkError as exc:
        return str(exc)
    failed = result.errors + result.non_2xx
    return Stats(
        requests=result.requests,
        seconds=result.seconds,
        latencies=[],
        errors=failed,
        first_error=(
            f"{result.non_2xx} answers >= 400, {result.errors} socket errors" if failed else ""
        ),
        client_cpu=result.client_cpu,
        fixed=(result.p50_ms / 1000, result.p99_ms / 1000),
    )


# ---------------------------------------------------------------------------------------------
# Servers


def _uvicorn_stack(python: Path) -> str:
    found = installed_versions(python, "uvicorn", "uvloop", "httptools")
    loop = f"uvloop {found['uvloop']}" if found["uvloop"] else "asyncio"
    http = f"httptools {found['httptools']}" if found["httptools"] else "h11"
    return f"uvicorn {found['uvicorn']} (loop=auto -> {loop}, http=auto -> {http}), 1 worker"


def _free_port() -> int:
    for port in range(46000, 47000, 11):
        if port_free(port):
            return port
    raise BenchError("no free port for the reference server")


@contextlib.contextmanager
def start_reference(data_dir: Path, password: str, args: argparse.Namespace) -> Iterator[Target]:
    """The reference on ``--reference-database``, logged in."""
    say("reference: preparing zenml[server]==0.96.3 (cached under ~/.cache/platform/) ...")
    try:
        venv = server_venv()
    except ZenmlEnvError as exc:
        raise BenchError(f"zenml server environment: {exc}") from None
    say(f"reference: starting uvicorn ({data_dir}, {args.reference_database}) ...")
    try:
        with mariadb.reference_on_store(
            venv.python, data_dir, args, port=_free_port(), password=password, start_timeout=300
        ) as (server, store):
            stack = (
                f"ZenML {ZENML_VERSION}, {_uvicorn_stack(venv.python)}, {store.described}, "
                "uvicorn access log on (as `zenml login --local` runs it)"
            )
            target = login("reference", server.url, password, stack)
            target.processes = {"zenml server": server.process.pid}
            if store.database:
                target.copy_versions = _reference_copier(venv.python, store)
                target.reference_store = (venv.python, store)
            yield target
    except mariadb.MariaDBError as exc:
        raise BenchError(f"reference database: {exc}") from None
    except ZenmlEnvError as exc:
        raise BenchError(f"reference server: {_first_line(str(exc))} (log: {data_dir})") from None


def _reference_copier(
    python: Path, store: mariadb.ReferenceStore
) -> Callable[[int, int, int], Awaitable[None]]:
    async def copy(start: int, stop: int, artifacts: int) -> None:
        try:
            await asyncio.to_thread(mariadb.copy_versions, python, store, start, stop, artifacts)
        except mariadb.MariaDBError as exc:
            raise BenchError(f"reference: copying versions: {exc}") from None

    return copy


def _our_copier(url: str) -> Callable[[int, int, int], Awaitable[None]]:
    async def copy(start: int, stop: int, artifacts: int) -> None:
        try:
            await scaling.copy_versions(url, start, stop, artifacts)
        except (OSError, asyncpg.PostgresError, RuntimeError) as exc:
            raise BenchError(f"ours: copying versions: {exc}") from None

    return copy


def our_name(replicas: int) -> str:
    """Our stack's name in the tables, by its tracking replicas."""
    return f"ours x{replicas}"


@contextlib.contextmanager
def start_ours(
    data_dir: Path, password: str, args: argparse.Namespace, replicas: int
) -> Iterator[Target]:
    """Our local stack with ``replicas`` tracking processes, logged in."""
    name = our_name(replicas)
    say(f"{name}: starting the local stack ({data_dir}) ...")
    try:
        with (
            postgres.stack_databases(
                args.database_url, keep=args.keep, tag=f"x{replicas}"
            ) as databases,
            launch_stack(
                data_dir,
                admin_password=password,
                start_timeout=120,
                databases=databases,
                replicas={"tracking": replicas},
            ) as stack,
        ):
            described = _our_stack(
                stack, postgres.describe(args.database_url, stack.output()), replicas
            )
            target = login(name, stack.url("platform", ""), password, described)
            target.processes = dict(stack.children)
            target.database_url = postgres.service_url("tracking", databases, stack.output())
            target.copy_versions = _our_copier(target.database_url)
            yield target
    except StackStartError as exc:
        raise BenchError(f"our stack: {_first_line(str(exc))} (log: {data_dir.parent})") from None


def our_uvicorn_stack() -> str:
    """:func:`_uvicorn_stack` of our services, which serve with ``shared.http_protocol``."""
    return _uvicorn_stack(Path(sys.executable)).replace(
        "http=auto -> ", "http=shared.http_protocol over "
    )


def _our_stack(stack: LaunchedStack, database: str, replicas: int) -> str:
    processes = "1 process" if replicas == 1 else f"{replicas} processes"
    return (
        f"nginx gateway :{stack.ports['platform']} (keep-alive upstream) -> tracking service "
        f"({processes}), {our_uvicorn_stack()}, {database}"
    )


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "failed"


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# The run


def modes(args: argparse.Namespace) -> list[tuple[str, int, int]]:
    """(label, clients, requests) per mode."""
    return [
        ("sequential", 1, args.requests),
        (f"{args.concurrency} clients", args.concurrency, args.concurrent_requests),
    ]


async def run_cells(targets: Sequence[Target], args: argparse.Namespace) -> list[Row]:
    """Measure every (workload, mode) on each target, interleaved, ``--repeat`` times."""
    results: dict[tuple[str, str], dict[str, list[Stats | str]]] = {}
    for workload in [w for w in RUN_ORDER if w in args.workloads]:
        for label, clients, total in modes(args):
            for _ in range(args.repeat):
                for target in targets:
                    cell = await measure(target, workload, clients, total, args)
                    results.setdefault((workload, label), {}).setdefault(target.name, []).append(
                        cell
                    )
                    shown = (
                        f"{cell.rps:.1f} req/s, p50 {cell.p50_ms:.1f} ms"
                        if isinstance(cell, Stats)
                        else cell
                    )
                    say(f"  {target.name:9} {WORKLOAD_TITLES[workload]:16} {label:12} {shown}")
    rows = []
    for workload in [w for w in args.workloads if w in WORKLOAD_TITLES]:
        for label, _, _ in modes(args):
            runs = results.get((workload, label), {})
            row = Row(WORKLOAD_TITLES[workload], label)
            for name, measured in runs.items():
                row.sides[name] = median_run(measured)
            rows.append(row)
    return rows


async def prepare(target: Target, args: argparse.Namespace) -> None:
    say(f"{target.name}: loading {args.rows} artifacts ({args.concurrency} clients) ...")
    started = time.perf_counter()
    await load_rows(target, args.rows, args.concurrency)
    say(f"{target.name}: loaded in {time.perf_counter() - started:.1f}s")
    if "versions" in args.workloads:
        load = await grow(target, args.versions, 0, args)
        say(f"{target.name}: loaded in {load.seconds:.1f}s ({load.how})")
    if any(w in args.workloads for w in SECRET_WORKLOADS):
        say(f"{target.name}: loading {args.secrets} secrets ...")
        started = time.perf_counter()
        await load_secrets(target, args.secrets, args.concurrency)
        say(f"{target.name}: loaded in {time.perf_counter() - started:.1f}s")
    say(f"{target.name}: warming up ...")
    reads = ("list", "get", "filter", "versions", *SECRET_WORKLOADS)
    for workload in [w for w in reads if w in args.workloads]:
        await measure(target, workload, 1, 0, args)  # the warm-up part only


def target_names(args: argparse.Namespace) -> list[str]:
    """The servers of the run, in the table's order."""
    names = [] if args.only == "ours" else ["reference"]
    if args.only != "reference":
        names += [our_name(n) for n in args.replicas]
    return names


def start_target(
    name: str, data_dir: Path, password: str, args: argparse.Namespace
) -> contextlib.AbstractContextManager[Target]:
    if name == "reference":
        return start_reference(data_dir, password, args)
    return start_ours(data_dir, password, args, int(name.removeprefix("ours x")))


def started_targets(
    names: Sequence[str],
    base: Path,
    password: str,
    args: argparse.Namespace,
    held: contextlib.ExitStack,
    ready: Callable[[Target], Awaitable[None]],
    prefix: str = "",
) -> tuple[list[Target], dict[str, str]]:
    """Each server started in ``base/<prefix><name>`` (stopped when ``held`` closes) and
    made ``ready``; one that fails is left out with its reason, unless it is the only
    one."""
    targets: list[Target] = []
    skipped: dict[str, str] = {}
    for name in names:
        data_dir = base / f"{prefix}{name.replace(' ', '-')}"
        target = held.enter_context(start_target(name, data_dir, password, args))
        try:
            _run_async(ready(target))
        except BenchError as exc:
            if len(names) == 1:
                raise
            say(f"{exc}; {name} is left out of the table")
            skipped[name] = str(exc)
            continue
        targets.append(target)
    if not targets:
        raise BenchError("no server could be measured")
    return targets, skipped


def print_servers(targets: Sequence[Target], args: argparse.Namespace) -> None:
    """What ran, under a table."""
    for target in targets:
        print(f"{target.name}: {target.server_stack}")
    print(
        f"sender: {wrk.version()} (one thread per connection, at most 2)"
        if args.sender == "wrk"
        else f"sender: python {sys.version.split()[0]}, httpx {httpx.__version__}, "
        f"event loop {_loop_name()}",
        f"; {os.cpu_count()} cores shared with the servers",
        sep="",
    )


def print_memory(targets: Sequence[Target], when: str) -> None:
    """Each server's processes at rest (``when``: after what)."""
    time.sleep(IDLE_SETTLE)
    print()
    print(
        f"idle memory {when} (a process group per row; the target is judged on RSS, for "
        f"Python processes: {memory.TARGET_MB:g} MB)"
    )
    print(memory.format_table((t.name, memory.measure(t.processes)) for t in targets))


def cells_phase(base: Path, password: str, args: argparse.Namespace) -> None:
    """The throughput table: every server at once, cells interleaved."""
    with contextlib.ExitStack() as held:
        names = target_names(args)
        targets, skipped = started_targets(
            names, base, password, args, held, lambda target: prepare(target, args)
        )
        print_memory(targets, "after loading and warming up")
        load_before = os.getloadavg()[0]
        rows = _run_async(run_cells(targets, args))
        load_after = os.getloadavg()[0]
        for row in rows:
            row.sides.update(skipped)
        print()
        print(
            f"tracking API, {args.rows} artifacts loaded; sequential = 1 keep-alive connection,"
            f" {args.concurrency} clients = one connection each; "
            + (
                f"{args.time_cap:g}s per cell with wrk"
                if args.sender == "wrk"
                else f"{args.requests}/{args.concurrent_requests} requests or "
                f"{args.time_cap:g}s per cell"
            )
            + "; p50/p99 in ms; cli ms = the sender's CPU per request"
        )
        print(format_table(rows, names))
        print()
        print_servers(targets, args)
        print(
            f"load average (1 min) before/after measuring: {load_before:.2f}/{load_after:.2f}"
            + (f"; each cell is the median of {args.repeat} runs" if args.repeat > 1 else "")
        )


def scaling_requests(target: Target, listing: str, size: int, artifacts: int) -> list[Request]:
    """The requests of one list of the scaling workload at ``size`` versions."""
    if listing == "plain":
        params = {
            "hydrate": "false",
            "page": "1",
            "size": "50",
            "sort_by": "created",
            "project": target.project_id,
        }
        return [("GET", "/api/v1/artifact_versions", params, None)]
    return [versions_request(target, i, size, artifacts) for i in range(artifacts)]


async def scale_point(
    target: Target, listing: str, size: int, args: argparse.Namespace
) -> scaling.Point:
    """One list at one size: 1 s of warm-up, then :data:`SCALE_SECONDS` on one connection."""
    requests = scaling_requests(target, listing, size, args.version_artifacts)
    if args.sender == "wrk":
        wrk_requests = [
            wrk.WrkRequest(method, path + (f"?{urlencode(params)}" if params else ""))
            for method, path, params, _ in requests
        ]
        headers = {"Authorization": f"Bearer {target.token}"}
        try:
            for seconds in (1.0, SCALE_SECONDS):
                result = await asyncio.to_thread(
                    wrk.run,
                    target.base_url,
                    wrk_requests,
                    connections=1,
                    seconds=seconds,
                    headers=headers,
                )
        except wrk.WrkError as exc:
            raise BenchError(f"{target.name}: {listing} list at {size}: {exc}") from None
        failed = result.errors + result.non_2xx
        return scaling.Point(
            target.name, size, listing, result.p50_ms, result.p95_ms, result.requests, failed
        )
    clients = _clients(target, 1)
    try:
        await drive(clients, args.warmup, lambda i: requests[i % len(requests)], time_cap=1.0)
        stats = await drive(
            clients, args.requests, lambda i: requests[i % len(requests)], time_cap=SCALE_SECONDS
        )
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))
    return scaling.Point(
        target.name,
        size,
        listing,
        percentile(stats.latencies, 50) * 1000,
        percentile(stats.latencies, 95) * 1000,
        stats.requests,
        stats.errors,
    )


async def grow(target: Target, size: int, loaded: int, args: argparse.Namespace) -> scaling.Load:
    """``target``'s versions from ``loaded`` to ``size``: the first ``--api-versions``
    (at least one batch) through the API, any beyond by SQL (see ``bench/scaling.py``)."""
    started = time.perf_counter()
    api_stop = size if target.copy_versions is None else min(size, max(args.api_versions, 1))
    how = []
    if loaded < api_stop:
        say(f"{target.name}: loading versions {loaded:,} to {api_stop:,} through the API ...")
        await load_versions(target, args, loaded, api_stop)
        writers = min(args.concurrency, LOAD_WRITERS)
        how.append(
            f"{api_stop - loaded:,} through the API ({args.batch} a batch, {writers} clients)"
        )
    copy_from = max(loaded, api_stop)
    if size > copy_from and target.copy_versions is not None:
        say(f"{target.name}: copying versions {copy_from:,} to {size:,} by SQL ...")
        await target.copy_versions(copy_from, size, args.version_artifacts)
        how.append(f"{size - copy_from:,} by SQL")
    return scaling.Load(
        target.name, size, size - loaded, ", ".join(how), time.perf_counter() - started
    )


async def run_scaling(
    targets: Sequence[Target], args: argparse.Namespace
) -> tuple[list[scaling.Point], list[scaling.Load]]:
    """Each size in turn: every server that goes that far grown to it, then measured."""
    points: list[scaling.Point] = []
    loads: list[scaling.Load] = []
    loaded = dict.fromkeys((t.name for t in targets), 0)
    for size in args.scaling_sizes:
        for target in targets:
            if target.name == "reference" and size > args.reference_scaling_max:
                continue
            loads.append(await grow(target, size, loaded[target.name], args))
            loaded[target.name] = size
            for listing in scaling.LISTS:
                point = await scale_point(target, listing, size, args)
                say(
                    f"  {target.name:9} {listing:8} at {size:>9,}: "
                    f"p50 {point.p50_ms:.1f} ms, p95 {point.p95_ms:.1f} ms"
                )
                points.append(point)
    return points, loads


def scaling_phase(base: Path, password: str, args: argparse.Namespace) -> None:
    """The scaling table, on fresh servers: the reference and ours with the fewest
    replicas."""
    names = [n for n in target_names(args) if n == "reference" or n == our_name(args.replicas[0])]
    with contextlib.ExitStack() as held:
        targets, _ = started_targets(
            names, base, password, args, held, lambda target: _no_preparation(), "scaling-"
        )
        if not any(w in WORKLOAD_TITLES for w in args.workloads):
            print_memory(targets, "after start-up")  # no cells phase printed it
        points, loads = _run_async(run_scaling(targets, args))
        print()
        print(
            f"list latency by artifact versions loaded (over {args.version_artifacts} "
            f"artifacts); one keep-alive connection, {SCALE_SECONDS:g}s per list and size; "
            "plain = the project's first 50, filtered = the versions workload's 3 filters"
        )
        print(scaling.format_table(points, loads))
        print()
        print_servers(targets, args)


async def _no_preparation() -> None:
    return None


def run(args: argparse.Namespace) -> int:
    """Start the servers, load, measure, print the tables; everything stopped on the way
    out."""
    base = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-tracking-"))
    base.mkdir(parents=True, exist_ok=True)
    password = f"Bench-{secrets.token_urlsafe(12)}"
    with contextlib.ExitStack() as stack:
        if not args.keep and args.data_dir is None:
            stack.callback(_remove_tree, base)
        elif args.keep:
            stack.callback(say, f"data dirs kept under {base}")
        if any(w in WORKLOAD_TITLES for w in args.workloads):
            cells_phase(base, password, args)
        if "scaling" in args.workloads:
            scaling_phase(base, password, args)
    return 0


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _loop_name() -> str:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def _run_async(coro: Awaitable[Any]) -> Any:
    factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    try:
        import uvloop
    except ImportError:
        pass
    else:
        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(_as_coroutine(coro))


async def _as_coroutine(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run_bench(run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """A bench script's exit code: ``run(args)``, with SIGTERM and SIGHUP stopping it as
    Ctrl-C does (every server it started is stopped on the way out), and a
    :class:`BenchError` one line on stderr."""
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    try:
        return run(args)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; every server was stopped", file=sys.stderr)
        return 130


def main(argv: Sequence[str] | None = None) -> int:
    return run_bench(run, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
