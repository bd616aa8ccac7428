"""The dashboard's run pages at scale: ZenML 0.96.3 against ours, side by side, same run.

    uv run python bench/runs.py                          # 1,000 steps; 100k and 1M runs
    uv run python bench/runs.py --steps 100 --run-sizes 10k --seconds 2   # a quick look
    uv run python bench/runs.py --only ours --database-url postgresql://postgres@127.0.0.1:5432/postgres

Starts the reference (on MariaDB, or ``--reference-database sqlite``) and our stack with
one tracking process, as ``bench/tracking.py`` starts them (its ``start_reference`` and
``start_ours``), then on each:

run page   a dynamic pipeline's run of ``--steps`` chained steps, each with its own
           configuration (``dynamic_config``), reading the artifact version the step
           before it produced and producing one; the run's own log file (``--log-lines``
           JSON entries in the default artifact store), all through the API. Then, each
           for ``--seconds`` on one keep-alive connection after 1 s of warm-up:
             GET /api/v1/runs/{id}?hydrate=true
             GET /api/v1/runs/{id}/dag
             GET /api/v1/runs/{id}/steps?size=50&sort_by=created&hydrate=true
             GET /api/v1/runs/{id}/logs?source=client
runs       the project grown to each of ``--run-sizes`` runs, then
             GET /api/v1/runs?hydrate=true&size=20&sort_by=desc:created (the runs page)
             GET /api/v1/projects/{id}/statistics                       (the home page)

Runs are copied by SQL from one the API made (a completed run of a two-step snapshot,
with two steps, a tag and a metadata value; the copies have no steps, tags or metadata of
their own): ours with one ``INSERT ... SELECT`` over ``generate_series`` per chunk, the
reference over MariaDB's sequence engine, each with its column list read from
``information_schema``, so every column the copies do not set is the template's.
Loading the reference stops at the first size that its load would take past
``--reference-load-seconds`` (its load rate measured on the first chunk); the table
says how far it went.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: import from the repo root, not from bench/
    sys.path[0] = str(REPO_ROOT)

import asyncpg  # noqa: E402
import httpx  # noqa: E402

from bench import mariadb, postgres, scaling  # noqa: E402
from bench.tracking import (  # noqa: E402
    DATA_TYPE,
    MATERIALIZER,
    BenchError,
    Request,
    Target,
    _clients,
    _remove_tree,
    _run_async,
    describe_http_error,
    drive,
    percentile,
    print_servers,
    run_bench,
    say,
    start_ours,
    start_reference,
)

RUN_COPY_CHUNK = 100_000
TEMPLATE = "bench-template"  # the copies' SQL names it too
STEP_WRITERS = 1


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=("reference", "ours"), help="measure one server only")
    parser.add_argument("--steps", type=int, default=1000, help="steps of the run (%(default)s)")
    parser.add_argument(
        "--log-lines", type=int, default=1000, help="entries in the run's log (%(default)s)"
    )
    parser.add_argument(
        "--run-sizes",
        type=scaling.sizes,
        default=[100_000, 1_000_000],
        help="runs in the project at each step of the runs list (default: 100k,1M)",
    )
    parser.add_argument(
        "--seconds", type=float, default=5.0, help="per call and size (%(default)s)"
    )
    parser.add_argument(
        "--reference-load-seconds",
        type=float,
        default=300.0,
        help="the longest the reference's runs may take to load by SQL (%(default)s)",
    )
    parser.add_argument(
        "--run-page-only",
        action="store_true",
        help="measure the run page's calls only, not the runs list and statistics",
    )
    parser.add_argument("--data-dir", type=Path, help="where the servers keep their data")
    parser.add_argument("--keep", action="store_true", help="keep data dirs and databases")
    mariadb.add_option(parser)
    postgres.add_option(parser)
    args = parser.parse_args(argv)
    args.sender = "python"
    return args


@dataclass(frozen=True)
class Timing:
    """One call on one server: latencies in ms."""

    target: str
    call: str
    size: int
    p50_ms: float
    p95_ms: float
    requests: int
    error: str = ""


async def _post(http: httpx.AsyncClient, path: str, body: Any) -> Any:
    response = await http.post(path, json=body)
    if response.status_code != 200:
        raise BenchError(describe_http_error(response))
    return response.json()


async def _get(http: httpx.AsyncClient, path: str, **params: str) -> Any:
    response = await http.get(path, params=params)
    if response.status_code != 200:
        raise BenchError(describe_http_error(response))
    return response.json()


def _step(name: str, before: str | None) -> dict[str, Any]:
    """A dynamic step's configuration as the client compiles it."""
    inputs = {} if before is None else {"x": {"step_name": before, "output_name": "out"}}
    spec = {
        "source": {"module": "bench", "attribute": "step", "type": "user"},
        "upstream_steps": [] if before is None else [before],
        "inputs": inputs,
        "invocation_id": name,
    }
    config = {"name": name, "parameters": {}, "outputs": {"out": {"materializer_source": []}}}
    return {"spec": spec, "config": config}


async def _snapshot(
    http: httpx.AsyncClient, target: Target, name: str, dynamic: bool, steps: dict[str, Any]
) -> dict[str, Any]:
    pipeline = await _post(http, "/api/v1/pipelines", {"project": target.project_id, "name": name})
    stacks = await _get(http, "/api/v1/stacks", name="default")
    body = {
        "project": target.project_id,
        "run_name_template": f"{name}-{{date}}-{{time}}",
        "pipeline_configuration": {"name": name},
        "step_configurations": steps,
        "is_dynamic": dynamic,
        "client_version": "0.96.3",
        "server_version": "0.96.3",
        "client_environment": {},
        "stack": stacks["items"][0]["id"],
        "pipeline": pipeline["id"],
    }
    snapshot: dict[str, Any] = await _post(http, "/api/v1/pipeline_snapshots", body)
    return snapshot


async def _artifact_store(http: httpx.AsyncClient) -> tuple[str, Path]:
    found = await _get(http, "/api/v1/components", type="artifact_store", hydrate="true")
    store = found["items"][0]
    # The reference keeps no path for its default store (it is its own local folder):
    # the log goes to a temporary one, which it may refuse to read.
    path = store["metadata"]["configuration"].get("path") or tempfile.mkdtemp(prefix="bench-")
    return store["id"], Path(path)


def _log_file(path: Path, lines: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as out:
        for n in range(lines):
            entry = {
                "message": f"step {n}: working",
                "name": "bench",
                "level": 20,
                "timestamp": f"2026-11-27T12:00:{n % 60:02d}",
                "module": "bench",
                "filename": "bench.py",
                "lineno": n,
            }
            out.write(json.dumps(entry) + "\n")


async def make_dynamic_run(target: Target, steps: int, log_lines: int) -> str:
    """The run page's run: ``steps`` chained steps, each reading the version the one
    before produced; its log file written where the client would write it."""
    tag = secrets.token_hex(3)
    clients = _clients(target, STEP_WRITERS, timeout=600)
    http = clients[0]
    try:
        snapshot = await _snapshot(http, target, f"dynamic-{tag}", True, {})
        store_id, store_path = await _artifact_store(http)
        logs_uri = store_path / "logs" / f"bench-{tag}.log"
        await asyncio.to_thread(_log_file, logs_uri, log_lines)
        logs = {"uri": str(logs_uri), "source": "client", "artifact_store_id": store_id}
        run, _ = await _post(
            http,
            "/api/v1/runs",
            {
                "project": target.project_id,
                "name": f"dynamic-{tag}",
                "snapshot": snapshot["id"],
                "status": "running",
                "orchestrator_run_id": tag,
                "start_time": "2026-11-27T12:00:00",
                "logs": {"project": target.project_id, **logs},
            },
        )
        versions = [
            {
                "project": target.project_id,
                "artifact_name": f"bench-out-{tag}",
                "version": n + 1,
                "type": "DataArtifact",
                "uri": f"{store_path}/bench-{tag}/{n}",
                "materializer": MATERIALIZER,
                "data_type": DATA_TYPE,
                "save_type": "step_output",
            }
            for n in range(steps)
        ]
        made = await _post(http, "/api/v1/artifact_versions/batch", versions)
        ids = [v["id"] for v in made]
        names = [f"step_{n:04d}" for n in range(steps)]

        def make(n: int) -> Request:
            before = names[n - 1] if n else None
            body = {
                "project": target.project_id,
                "name": names[n],
                "start_time": "2026-11-27T12:00:01",
                "end_time": "2026-11-27T12:00:02",
                "status": "completed",
                "pipeline_run_id": run["id"],
                "dynamic_config": _step(names[n], before),
                "inputs": {"x": [ids[n - 1]]} if n else {},
                "outputs": {"out": [ids[n]]},
            }
            return "POST", "/api/v1/steps", None, body

        # One at a time, in order: the reference refuses a step whose upstream step is
        # not there yet.
        stats = await drive(clients[:1], steps, make, time_cap=3600)
        if stats.errors:
            raise BenchError(f"{target.name}: creating steps: {stats.first_error}")
        return str(run["id"])
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))


def run_page_calls(run_id: str) -> list[tuple[str, Request]]:
    base = f"/api/v1/runs/{run_id}"
    steps = {"size": "50", "page": "1", "sort_by": "created", "hydrate": "true"}
    return [
        ("run (hydrated)", ("GET", base, {"hydrate": "true"}, None)),
        ("DAG", ("GET", f"{base}/dag", None, None)),
        ("steps size=50", ("GET", f"{base}/steps", steps, None)),
        ("run logs", ("GET", f"{base}/logs", {"source": "client"}, None)),
    ]


def runs_page_calls(target: Target) -> list[tuple[str, Request]]:
    listed = {
        "hydrate": "true",
        "size": "20",
        "page": "1",
        "sort_by": "desc:created",
        "project": target.project_id,
    }
    return [
        ("runs list hydrated", ("GET", "/api/v1/runs", listed, None)),
        (
            "project statistics",
            ("GET", f"/api/v1/projects/{target.project_id}/statistics", None, None),
        ),
    ]


async def time_call(
    target: Target, call: str, request: Request, size: int, seconds: float
) -> Timing:
    """1 s of warm-up, then ``seconds`` of one call on one keep-alive connection."""
    clients = _clients(target, 1, timeout=120)
    try:
        await drive(clients, 10**9, lambda i: request, time_cap=1.0)
        stats = await drive(clients, 10**9, lambda i: request, time_cap=seconds)
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))
    return Timing(
        target.name,
        call,
        size,
        percentile(stats.latencies, 50) * 1000,
        percentile(stats.latencies, 95) * 1000,
        stats.requests,
        stats.first_error,
    )


async def make_template_run(target: Target) -> None:
    """The completed run that the copies copy: two steps, a tag, a metadata value."""
    async with _clients(target, 1, timeout=120)[0] as http:
        steps = {"a": _step("a", None), "b": _step("b", "a")}
        snapshot = await _snapshot(http, target, f"static-{secrets.token_hex(3)}", False, steps)
        run, _ = await _post(
            http,
            "/api/v1/runs",
            {
                "project": target.project_id,
                "name": TEMPLATE,
                "snapshot": snapshot["id"],
                "status": "running",
                "orchestrator_run_id": secrets.token_hex(4),
                "start_time": "2026-11-27T12:00:00",
                "tags": ["bench"],
            },
        )
        for name in ("a", "b"):
            body = {
                "project": target.project_id,
                "name": name,
                "start_time": "2026-11-27T12:00:01",
                "end_time": "2026-11-27T12:00:02",
                "status": "completed",
                "pipeline_run_id": run["id"],
            }
            await _post(http, "/api/v1/steps", body)
        metadata = {
            "project": target.project_id,
            "resources": [{"id": run["id"], "type": "pipeline_run"}],
            "values": {"accuracy": 0.9},
            "types": {"accuracy": "float"},
        }
        await _post(http, "/api/v1/run-metadata", metadata)


# Ours: runs $1 to $2 - 1 as copies of the template, a microsecond apart after the newest
# run; every other column the template's. (Built from the row as JSON, the copy took 1 ms
# a row.)
_OUR_VALUES = {
    "id": "gen_random_uuid()",
    "name": "'bench-run-' || i",
    "index": "i + 2",
    "orchestrator_run_id": "'bench-' || i",
    "created": "l.created + (i - $1 + 1) * interval '1 microsecond'",
    "updated": "l.created + (i - $1 + 1) * interval '1 microsecond'",
}
_OUR_COLUMNS = """
SELECT column_name FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = 'pipeline_runs'
ORDER BY ordinal_position
"""


def our_copy(columns: Sequence[str]) -> str:
    values = ", ".join(_OUR_VALUES.get(c, f't."{c}"') for c in columns)
    names = ", ".join(f'"{c}"' for c in columns)
    return (
        f"INSERT INTO pipeline_runs ({names}) SELECT {values} "  # noqa: S608 - our own names
        "FROM generate_series($1::bigint, $2::bigint - 1) AS i "
        "CROSS JOIN (SELECT * FROM pipeline_runs WHERE name = 'bench-template') AS t "
        "CROSS JOIN (SELECT max(created) AS created FROM pipeline_runs) AS l"
    )


# The reference's: its columns in order, the template's values but for these.
_REFERENCE_VALUES = {
    "id": "REPLACE(UUID(), '-', '')",
    "name": "CONCAT('bench-run-', s.seq)",
    "index": "s.seq + 2",
    "orchestrator_run_id": "CONCAT('bench-', s.seq)",
    "created": "l.c + INTERVAL ((s.seq - {start}) DIV 100 + 1) SECOND",
    "updated": "l.c + INTERVAL ((s.seq - {start}) DIV 100 + 1) SECOND",
}
_REFERENCE_COLUMNS = (
    "SET @columns = (SELECT GROUP_CONCAT(CASE column_name "
    + " ".join(f"WHEN '{k}' THEN {json.dumps(v)}" for k, v in _REFERENCE_VALUES.items())
    + " ELSE CONCAT('t.`', column_name, '`') END ORDER BY ordinal_position SEPARATOR ', ') "
    "FROM information_schema.columns "
    "WHERE table_schema = DATABASE() AND table_name = 'pipeline_run')"
)
_REFERENCE_COPY = (
    "SET @copy = CONCAT('INSERT INTO pipeline_run SELECT ', @columns, "
    "' FROM seq_{start}_to_{last} AS s "
    "CROSS JOIN (SELECT * FROM pipeline_run WHERE name = ''bench-template'') AS t "
    "CROSS JOIN (SELECT MAX(created) AS c FROM pipeline_run) AS l')"
)


async def copy_runs(target: Target, start: int, stop: int) -> None:
    """Runs ``start`` to ``stop - 1`` copied into ``target``'s database by SQL."""
    if target.reference_store is not None:
        python, store = target.reference_store
        statements = []
        for begin in range(start, stop, RUN_COPY_CHUNK):
            last = min(begin + RUN_COPY_CHUNK, stop) - 1
            statements += [
                _REFERENCE_COLUMNS.format(start=begin),
                _REFERENCE_COPY.format(start=begin, last=last),
                "PREPARE copy_runs FROM @copy",
                "EXECUTE copy_runs",
                "DEALLOCATE PREPARE copy_runs",
            ]
        statements.append("ANALYZE TABLE pipeline_run")
        try:
            await asyncio.to_thread(mariadb.execute, python, store, statements)
        except mariadb.MariaDBError as exc:
            raise BenchError(f"reference: copying runs: {exc}") from None
        return
    if not target.database_url:
        raise BenchError(f"{target.name}: no database to copy runs into")
    connection = await asyncpg.connect(target.database_url)
    try:
        copy = our_copy([row[0] for row in await connection.fetch(_OUR_COLUMNS)])
        for begin in range(start, stop, RUN_COPY_CHUNK):
            end = min(begin + RUN_COPY_CHUNK, stop)
            status = await connection.execute(copy, begin, end)
            if status != f"INSERT 0 {end - begin}":
                raise BenchError(f"ours: copying runs {begin}-{end}: {status}")
        await connection.execute("VACUUM (ANALYZE) pipeline_runs")
    finally:
        await connection.close()


async def runs_total(target: Target) -> int:
    async with _clients(target, 1, timeout=600)[0] as http:
        found = await _get(http, "/api/v1/runs", size="1", project=target.project_id)
    return int(found["total"])


def format_timings(timings: Sequence[Timing], names: Sequence[str], by_size: bool) -> str:
    """A line per call (and size): each server's p50/p95, and ours over the reference."""
    found = {(t.target, t.call, t.size): t for t in timings}
    keys = list(dict.fromkeys((t.call, t.size) for t in timings))
    header = ["runs" if by_size else "", "call", *(f"{n} p50/p95 ms" for n in names)]
    if len(names) == 2:
        header.append("p50 ours/ref")
    lines = []
    for call, size in keys:
        cells = [f"{size:,}" if by_size else "", call]
        for name in names:
            t = found.get((name, call, size))
            if t is None:
                cells.append("-")
            elif t.error:
                cells.append("failed (below)")
            else:
                cells.append(f"{t.p50_ms:.1f} / {t.p95_ms:.1f} ({t.requests})")
        if len(names) == 2:
            ref, ours = (found.get((n, call, size)) for n in names)
            ok = ref is not None and ours is not None and not ref.error and not ours.error
            cells.append(f"{ours.p50_ms / ref.p50_ms:.2f}" if ok and ref.p50_ms else "-")  # type: ignore[union-attr]
        lines.append(cells)
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]
    out = [
        "  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True))
        for line in [header, *lines]
    ]
    out.insert(1, "  ".join("-" * w for w in widths))
    out += [f"failed: {t.target}, {t.call}: {t.error[:400]}" for t in timings if t.error]
    return "\n".join(out)


async def run_page_phase(targets: Sequence[Target], args: argparse.Namespace) -> list[Timing]:
    runs = {}
    for target in targets:
        say(f"{target.name}: a dynamic run of {args.steps:,} steps through the API ...")
        started = time.perf_counter()
        try:
            runs[target.name] = await make_dynamic_run(target, args.steps, args.log_lines)
        except BenchError as exc:
            say(f"{target.name}: {exc}")
            continue
        say(f"  made in {time.perf_counter() - started:.1f}s")
    timings = []
    for index in range(len(run_page_calls(""))):
        for target in targets:
            if target.name not in runs:
                continue
            call, request = run_page_calls(runs[target.name])[index]
            timing = await time_call(target, call, request, args.steps, args.seconds)
            say(f"  {target.name:9} {call:18} p50 {timing.p50_ms:.1f} ms {timing.error[:80]}")
            timings.append(timing)
    return timings


async def runs_phase(
    targets: Sequence[Target], args: argparse.Namespace, loads: list[str]
) -> list[Timing]:
    timings: list[Timing] = []
    loaded = {}
    for target in targets:
        await make_template_run(target)
        loaded[target.name] = await runs_total(target)
    rates: dict[str, float] = {}
    stopped: set[str] = set()
    for size in args.run_sizes:
        for target in targets:
            if target.name in stopped:
                continue
            have = loaded[target.name]
            if size > have:
                rate = rates.get(target.name)
                if (
                    target.reference_store is not None
                    and rate is not None
                    and (size - have) / rate > args.reference_load_seconds
                ):
                    stopped.add(target.name)
                    loads.append(
                        f"  {target.name}: not loaded to {size:,} runs: at {rate:,.0f} runs/s "
                        f"it would take {(size - have) / rate:,.0f}s "
                        f"(more than --reference-load-seconds {args.reference_load_seconds:g})"
                    )
                    continue
                say(f"{target.name}: copying runs {have:,} to {size:,} by SQL ...")
                started = time.perf_counter()
                await copy_runs(target, have, size)
                seconds = time.perf_counter() - started
                rates[target.name] = (size - have) / seconds
                loaded[target.name] = size
                loads.append(
                    f"  {target.name} to {size:,}: {size - have:,} runs by SQL in {seconds:.1f}s"
                )
            total = await runs_total(target)
            for call, request in runs_page_calls(target):
                timing = await time_call(target, call, request, total, args.seconds)
                say(f"  {target.name:9} {call:18} at {total:>9,}: p50 {timing.p50_ms:.1f} ms")
                timings.append(timing)
    return timings


def run(args: argparse.Namespace) -> int:
    base = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-runs-"))
    base.mkdir(parents=True, exist_ok=True)
    password = f"Bench-{secrets.token_urlsafe(12)}"
    with contextlib.ExitStack() as held:
        if not args.keep and args.data_dir is None:
            held.callback(_remove_tree, base)
        targets = []
        if args.only != "ours":
            targets.append(held.enter_context(start_reference(base / "reference", password, args)))
        if args.only != "reference":
            targets.append(held.enter_context(start_ours(base / "ours", password, args, 1)))
        names = [t.name for t in targets]
        page = _run_async(run_page_phase(targets, args))
        loads: list[str] = []
        listed = [] if args.run_page_only else _run_async(runs_phase(targets, args, loads))
        print()
        print(
            f"the run page of a dynamic run of {args.steps:,} steps (each its own "
            f"configuration, an input and an output), {args.log_lines:,} log entries; "
            f"one keep-alive connection, {args.seconds:g}s per call (requests in brackets)"
        )
        print(format_timings(page, names, by_size=False))
        print()
        if not args.run_page_only:
            print(
                "the runs page and the home page's counts by runs in the project (runs as "
                f"counted by the list's total); {args.seconds:g}s per call and size"
            )
            print(format_timings(listed, names, by_size=True))
            print("loaded:")
            print("\n".join(loads))
            print()
        print_servers(targets, args)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_bench(run, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
