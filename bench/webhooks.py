"""Webhook intake throughput: ours through the gateway, a bare Starlette endpoint answering
202 (the ceiling on this machine) and the reference (ZenML 0.98.0), side by side, one run.

    uv run python bench/webhooks.py                      # all three, defaults
    uv run python bench/webhooks.py --duration 5 --runs 1 --only ours
    uv run python bench/webhooks.py --database-url postgresql://postgres@127.0.0.1:5432/postgres

Every target receives signed ``custom`` deliveries (``X-ZenML-Event`` and
``X-ZenML-Signature-256``, HMAC-SHA256 over the exact body) from ``wrk`` with
``--connections`` concurrent senders (one connection each, ``--threads`` wrk threads). The
signature covers the body alone, so the body names the event: each request has a body of
its own (and an ``X-ZenML-Delivery`` id), signed here before the run since wrk's Lua cannot,
so no delivery is absorbed as a replay and every accepted one is enqueued durably (ours: in
Redis before the 202). Each target is warmed up, then measured ``--runs`` times; the table
shows the medians.

- ours: the local stack (``python -m deploy.local``, temporary data dir, shifted ports):
  nginx gateway → webhooks service, with Valkey (append-only, noeviction) and the arq
  worker consuming the queue as it would in use; PostgreSQL: the launcher's embedded
  server, or with ``--database-url`` a new database per service on that server (see
  ``bench/postgres.py``);
- ceiling: a Starlette app whose one route answers 202 without reading anything, under the
  same uvicorn (loop and http ``auto``, no access log), reached directly;
- reference: ``zenml[server]==0.98.0`` from PyPI in its own cached environment
  (``tests/support/zenml_env.py``), uvicorn on 127.0.0.1, on MariaDB (a database and user
  made for the run on ``--mariadb-url``'s server, see ``bench/mariadb.py``), or with
  ``--reference-database sqlite`` its own SQLite file.

All three share the 2 cores with wrk; wrk's own CPU time is printed beside the table. Since
throughput on a shared machine is noisy, the bench also reads the CPU time (user + system,
from ``/proc``) that each of our processes (and the ceiling's) used during the measured runs,
with that of the children they reaped (Valkey's append-only-file rewrites), and prints it
per accepted request: the service, the gateway, Valkey, the worker, the embedded PostgreSQL
(a server named with ``--database-url`` is not counted) and the launcher that relays their
logs.

``--appendfsync always,everysec`` measures ours' lanes under each of Valkey's fsync policies
in turn (set with ``CONFIG SET`` before each run, the lanes of one policy beside those of the
other in every round), and prints each one's accepted/s as a share of the first's.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import hmac
import json
import math
import os
import re
import resource
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: import from the repo root, not from bench/
    sys.path[0] = str(REPO_ROOT)

import httpx  # noqa: E402
import redis  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import Response  # noqa: E402
from starlette.routing import Route  # noqa: E402

from bench import mariadb, postgres  # noqa: E402
from bench.tracking import (  # noqa: E402
    BenchError,
    Target,
    _free_port,
    _terminate,
    _uvicorn_stack,
    describe_http_error,
    login,
    our_uvicorn_stack,
    say,
)
from deploy.config import load_stack  # noqa: E402
from deploy.gateway.render import local_target, render  # noqa: E402
from deploy.local.gateway import command, nginx_binary, worker_user  # noqa: E402
from tests.support.processes import LaunchedStack, StackStartError, launch_stack  # noqa: E402
from tests.support.redis_server import free_port  # noqa: E402
from tests.support.zenml_env import (  # noqa: E402
    ZenmlEnvError,
    ensure_venv,
    stop_process,
)

REFERENCE_VERSION = "0.98.0"
TARGETS = ("ceiling", "ours", "reference")
APPENDFSYNC = ("always", "everysec", "no")  # Valkey's policies
SECRET = "bench-" + "s" * 32
BODY = json.dumps(
    {"type": "build.finished", "build": {"id": 4711, "status": "success", "branch": "main"}},
    separators=(",", ":"),
)
RESULT = "@@wrk "
CEILING_PATH = "/api/v1/webhooks/custom/{webhook_id}/events"


def delivery_body(name: str) -> str:
    """:data:`BODY` with the delivery's ``name`` in it. The ``sha256=`` signature covers the
    body alone, so the body names the event (services/webhooks/README.md, Providers): a
    delivery needs a body of its own not to be absorbed as a replay."""
    return BODY[:-1] + f',"delivery":{json.dumps(name)}}}'


# Deliveries signed for a wrk run, per second of it: more than any target answers here (the
# ceiling, direct, has answered over 42,000/s on a quiet machine).
SIGNED_PER_SECOND = 80_000

LUA = r"""
local threads, signatures, bodies, sent = {}, {}, {}, 0
count, made = 0, 0  -- globals: done() reads them from each thread
function setup(thread)
  thread:set("first", #threads)
  threads[#threads + 1] = thread
end
function init(args)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["X-ZenML-Event"] = "build.finished"
  -- This thread's share of the signed deliveries ("<signature> <body>" lines): one line
  -- in each thread's count, from its own first.
  local n = 0
  for line in io.lines(__SIGNED__) do
    if n % __THREADS__ == first then
      local space = line:find(" ", 1, true)
      count = count + 1
      signatures[count], bodies[count] = line:sub(1, space - 1), line:sub(space + 1)
    end
    n = n + 1
  end
end
function request()
  made = made + 1
  sent = sent % count + 1  -- past its share a thread repeats it (run_wrk refuses the run)
  wrk.headers["X-ZenML-Signature-256"] = signatures[sent]
  wrk.headers["X-ZenML-Delivery"] = __RUN__ .. "-" .. (first + (sent - 1) * __THREADS__)
  return wrk.format(nil, __PATH__, nil, bodies[sent])
end
function done(summary, latency, requests)
  local e, repeated = summary.errors, 0
  for _, thread in ipairs(threads) do
    repeated = repeated + math.max(0, thread:get("made") - thread:get("count"))
  end
  io.write(string.format(
    '__RESULT__{"requests":%d,"duration_us":%d,"status":%d,"connect":%d,"read":%d,' ..
    '"write":%d,"timeout":%d,"p50_us":%d,"p99_us":%d,"max_us":%d,"repeated":%d}\n',
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max, repeated))
end
"""


# ---------------------------------------------------------------------------------------------
# The ceiling: an app that answers 202 and nothing else


async def _accept(_request: Request) -> Response:
    return Response(status_code=202)


def bare_app() -> Starlette:
    """``uvicorn --factory bench.webhooks:bare_app``: the ceiling, on the intake's path."""
    return Starlette(routes=[Route(CEILING_PATH, _accept, methods=["POST"])])


# ---------------------------------------------------------------------------------------------
# Measuring

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(groups: Mapping[str, int]) -> dict[str, float]:
    """CPU time (user + system) used so far by the live processes of each process group
    (name → process group id), with that of the children they have reaped: Valkey's
    append-only-file rewrites run in forked children, and a child that ends between two
    readings is counted in its parent's."""
    names = {pgid: name for name, pgid in groups.items()}
    totals = dict.fromkeys(groups, 0.0)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited while we looked
        # After the command name (in parentheses, may contain spaces): state, ppid, pgrp,
        # ..., utime, stime, cutime and cstime (the 12th to 15th fields from there).
        fields = stat.rsplit(")", 1)[1].split()
        name = names.get(int(fields[2]))
        if name is not None:
            totals[name] += sum(int(f) for f in fields[11:15]) / CLOCK_TICKS
    return totals


class ServerStuck(BenchError):
    """The server stopped answering during a run (the reference does under this load)."""


@dataclass
class Run:
    requests: int
    seconds: float
    non_2xx: int
    socket_errors: int
    p50_ms: float
    p99_ms: float
    wrk_cpu: float
    cpu: dict[str, float] = field(default_factory=dict)  # process group → CPU seconds

    @property
    def ok_per_second(self) -> float:
        return (self.requests - self.non_2xx - self.socket_errors) / self.seconds


@dataclass
class Measured:
    name: str
    stack: str
    runs: list[Run] = field(default_factory=list)
    stuck: str = ""  # why the runs stopped early, if they did
    notes: dict[str, str] = field(default_factory=dict)  # printed after the stack

    def ratio_to(self, base: Measured) -> float | None:
        """Accepted/s as a share of ``base``'s: the median of the rounds' ratios when both
        ran in the same rounds, else the ratio of the medians."""
        if not self.runs or not base.runs:
            return None
        if len(self.runs) == len(base.runs):
            return float(
                statistics.median(
                    mine.ok_per_second / theirs.ok_per_second
                    for mine, theirs in zip(self.runs, base.runs, strict=True)
                    if theirs.ok_per_second
                )
            )
        base_rate = base.median("ok_per_second")
        return self.median("ok_per_second") / base_rate if base_rate else None

    def median(self, attribute: str) -> float:
        if not self.runs:
            return 0.0
        return float(statistics.median(getattr(r, attribute) for r in self.runs))

    def cpu_ms_per_request(self) -> dict[str, float]:
        """Median over the runs of each process group's CPU milliseconds per accepted
        request."""
        names = [name for name in self.runs[0].cpu] if self.runs else []
        return {
            name: statistics.median(
                1000 * r.cpu[name] / max(1, r.requests - r.non_2xx - r.socket_errors)
                for r in self.runs
            )
            for name in names
        }


def signature(body: str) -> str:
    return "sha256=" + hmac.new(SECRET.encode(), body.encode(), hashlib.sha256).hexdigest()


def signed_deliveries(directory: Path, run_id: str, count: int) -> Path:
    """``count`` deliveries of the run, each a body of its own (named ``<run>-<n>``) after
    its signature, one a line."""
    target = directory / f"signed-{run_id}.txt"
    with target.open("w") as out:
        for n in range(count):
            body = delivery_body(f"{run_id}-{n}")
            out.write(f"{signature(body)} {body}\n")
    return target


def wrk_script(directory: Path, path: str, run_id: str, threads: int, count: int) -> Path:
    """wrk's script for one run sending up to ``count`` signed deliveries."""
    signed = signed_deliveries(directory, run_id, count)
    script = (
        LUA.replace("__SIGNED__", json.dumps(str(signed)))
        .replace("__THREADS__", str(threads))
        .replace("__RUN__", json.dumps(run_id))
        .replace("__PATH__", json.dumps(path))
        .replace("__RESULT__", RESULT)
    )
    target = directory / f"wrk-{run_id}.lua"
    target.write_text(script)
    return target


def run_wrk(
    url: str,
    path: str,
    args: argparse.Namespace,
    seconds: float,
    workdir: Path,
    groups: Mapping[str, int] | None = None,
) -> Run:
    signed = math.ceil(seconds * SIGNED_PER_SECOND)
    script = wrk_script(workdir, path, secrets.token_hex(4), args.threads, signed)
    argv = ["wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{seconds:g}s",
            "--timeout", "30s", "-s", str(script), url]  # fmt: skip
    groups = groups or {}
    cpu_before = cpu_seconds(groups)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=seconds + 60, check=False
        )
    except subprocess.TimeoutExpired:
        raise ServerStuck(
            f"wrk did not finish {seconds + 60:g}s after a {seconds:g}s run"
        ) from None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_after = cpu_seconds(groups)
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
    if done.returncode != 0 or not lines:
        raise BenchError(f"wrk failed ({done.returncode}): {done.stderr.strip() or done.stdout}")
    result = json.loads(lines[-1].removeprefix(RESULT))
    if result["repeated"]:
        raise BenchError(
            f"wrk sent {result['repeated']} deliveries again, past the {signed} signed for "
            "the run (replays, cheaper than deliveries): raise SIGNED_PER_SECOND"
        )
    return Run(
        requests=result["requests"],
        seconds=result["duration_us"] / 1e6,
        non_2xx=result["status"],
        socket_errors=result["connect"] + result["read"] + result["write"] + result["timeout"],
        p50_ms=result["p50_us"] / 1000,
        p99_ms=result["p99_us"] / 1000,
        wrk_cpu=(after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        cpu={name: cpu_after[name] - cpu_before[name] for name in groups},
    )


def measure(
    name: str,
    stack: str,
    url: str,
    path: str,
    args: argparse.Namespace,
    groups: Mapping[str, int] | None = None,
) -> Measured:
    """One target on its own: warmed up, then measured ``--runs`` times."""
    lane = Lane(Measured(name, stack), url, path, groups or {})
    measure_in_rounds([lane], args)
    return lane.measured


@dataclass
class Lane:
    """A target measured in rounds, with what to do around each of its runs."""

    measured: Measured
    url: str
    path: str
    groups: Mapping[str, int]
    around: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext
    before: Callable[[], None] = lambda: None  # ahead of each run (and the warm-up)


def measure_in_rounds(lanes: Sequence[Lane], args: argparse.Namespace) -> None:
    """Warm every lane up, then ``--runs`` rounds of one run per lane, in turn: on a
    machine whose speed drifts (a shared virtual machine), every target sees the same
    drift, and each round's ratios compare runs made within a minute of each other. Every
    other round runs the lanes in reverse order, so that neither of two neighbours always
    runs first (a drift within a round favours neither): put the lanes a ratio compares
    next to each other."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-wrk-"))
    try:
        live = list(lanes)
        for lane in list(live):
            say(f"{lane.measured.name}: warming up {args.warmup:g}s ...")
            lane.before()
            try:
                with lane.around():
                    run_wrk(lane.url, lane.path, args, args.warmup, workdir)
            except ServerStuck as exc:
                say(f"{lane.measured.name}: warm-up: {exc}; the server stopped answering")
                lane.measured.stuck = "stopped answering during the warm-up"
                live.remove(lane)
        for n in range(args.runs):
            for lane in list(live) if n % 2 == 0 else live[::-1]:
                name = lane.measured.name
                lane.before()
                time.sleep(args.pause)
                try:
                    with lane.around():
                        run = run_wrk(
                            lane.url, lane.path, args, args.duration, workdir, lane.groups
                        )
                except ServerStuck as exc:
                    say(f"{name}: run {n + 1}/{args.runs}: {exc}; the server stopped answering")
                    lane.measured.stuck = f"stopped answering during run {n + 1} of {args.runs}"
                    live.remove(lane)
                    continue
                say(
                    f"{name}: run {n + 1}/{args.runs}: {run.ok_per_second:.0f}/s accepted, "
                    f"p99 {run.p99_ms:.1f} ms, {run.non_2xx} non-2xx, "
                    f"{run.socket_errors} socket errors"
                )
                lane.measured.runs.append(run)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The three targets


def create_webhook(target: Target) -> str:
    """A ``custom`` webhook with the bench's secret; its intake path."""
    with httpx.Client(base_url=target.base_url, timeout=30.0, trust_env=False) as http:
        response = http.post(
            "/api/v1/webhooks",
            json={
                "project": target.project_id,
                "name": f"bench-{secrets.token_hex(3)}",
                "webhook_type": "custom",
                "secret": SECRET,
            },
            headers={"Authorization": f"Bearer {target.token}"},
        )
    if response.status_code != 200:
        raise BenchError(f"{target.name}: cannot create a webhook: {describe_http_error(response)}")
    return f"/api/v1/webhooks/custom/{response.json()['id']}/events"


def accepted_count(target: Target, path: str) -> int:
    webhook_id = path.split("/")[-2]
    with httpx.Client(base_url=target.base_url, timeout=30.0, trust_env=False) as http:
        response = http.get(
            f"/api/v1/webhooks/{webhook_id}",
            params={"hydrate": "true"},
            headers={"Authorization": f"Bearer {target.token}"},
        )
    count: int = response.json()["metadata"]["stats"]["accepted_count"]
    return count


@contextlib.contextmanager
def started(
    argv: list[str],
    log: Path,
    what: str,
    ready: Callable[[], bool],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    poll: float = 0.1,
) -> Iterator[int]:
    """Run ``argv`` (a session of its own, its output in ``log``) until the block ends;
    wait until ``ready()``. Gives its pid, which is its process group's id."""
    with log.open("wb") as output:
        process = subprocess.Popen(
            argv,
            cwd=REPO_ROOT,
            env=None if env is None else dict(env),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline or process.poll() is not None:
                raise BenchError(f"{what} did not start: {log.read_text(errors='replace')[-800:]}")
            time.sleep(poll)
        yield process.pid
    finally:
        stop_process(process)


@contextlib.contextmanager
def _process(argv: list[str], log: Path, what: str, probe: str) -> Iterator[int]:
    """:func:`started`, ready when a POST to ``probe`` answers 202."""

    def ready() -> bool:
        with contextlib.suppress(httpx.HTTPError):
            return httpx.post(probe, trust_env=False).status_code == 202
        return False

    with started(argv, log, what, ready) as pid:
        yield pid


@dataclass(frozen=True)
class Ceiling:
    direct: str  # the bare app's URL
    gateway: str  # the same app behind ours' gateway configuration
    path: str
    stack: str  # what runs it
    groups: dict[str, int]  # process groups: "service" (the bare app), "gateway"


@contextlib.contextmanager
def ceiling(base: Path) -> Iterator[Ceiling]:
    """The bare app, and the same gateway as ours (stack.toml's route table, the webhooks
    upstream pointing at the bare app)."""
    path = CEILING_PATH.format(webhook_id=uuid.uuid4())
    app_port = free_port()
    argv = [sys.executable, "-m", "uvicorn", "--factory", "bench.webhooks:bare_app",
            "--host", "127.0.0.1", "--port", str(app_port), "--no-access-log"]  # fmt: skip
    direct = f"http://127.0.0.1:{app_port}"
    stack = load_stack()
    ports = {e.name: free_port() for e in stack.entrypoints}
    target = local_target(stack, ports=ports, user=worker_user())
    upstreams = {**target.upstreams, "webhooks": (f"127.0.0.1:{app_port}",)}
    prefix = base / "gateway"
    prefix.mkdir(parents=True, exist_ok=True)
    config = prefix / "nginx.conf"
    config.write_text(render(stack, dataclasses.replace(target, upstreams=upstreams)))
    gateway = f"http://127.0.0.1:{ports['platform']}"
    server = _uvicorn_stack(Path(sys.executable))
    with (
        _process(argv, base / "ceiling.log", "the bare app", direct + path) as app_group,
        _process(
            command(nginx_binary(), prefix, config), base / "nginx.log", "nginx", gateway + path
        ) as gateway_group,
    ):
        yield Ceiling(
            direct,
            gateway,
            path,
            f"bare Starlette route answering 202, {server}",
            {"service": app_group, "gateway": gateway_group},
        )


@dataclass
class Ours:
    """Our running stack, its logged-in target and its worker."""

    target: Target
    path: str
    stack: LaunchedStack

    @property
    def groups(self) -> dict[str, int]:
        """The process groups whose CPU time the bench reports."""
        children = self.stack.children
        groups = {
            "service": children["webhooks"],
            "gateway": children["gateway"],
            "valkey": children["valkey"],
            "worker": children["webhooks-worker"],
            # It relays every child's log lines (the access log's among them).
            "launcher": self.stack.process.pid,
        }
        if "postgres" in children:  # the embedded server
            groups["postgres"] = children["postgres"]
        return groups

    @contextlib.contextmanager
    def valkey(self) -> Iterator[redis.Redis]:
        """A client of the stack's Valkey (the launcher prints where it listens)."""
        found = re.search(r"valkey is ready at (redis://\S+)", self.stack.output())
        if found is None:
            raise BenchError("our stack did not say where Valkey listens")
        client = redis.Redis.from_url(found.group(1), decode_responses=True)
        try:
            yield client
        finally:
            client.close()

    def queued(self) -> int:
        """Events waiting in the queue."""
        with self.valkey() as client:
            count: int = client.zcard("platform:webhooks:events")  # type: ignore[assignment]
            return count

    def appendfsync(self, policy: str | None = None) -> str:
        """Valkey's fsync policy of its append-only file, set to ``policy`` first if given."""
        with self.valkey() as client:
            if policy is not None:
                client.config_set("appendfsync", policy)
            config: dict[str, str] = client.config_get("appendfsync")  # type: ignore[assignment]
            return config["appendfsync"]

    @contextlib.contextmanager
    def worker_paused(self) -> Iterator[None]:
        """SIGSTOP the worker's process group (its jobs stay queued), SIGCONT after."""
        group = self.stack.children["webhooks-worker"]
        os.killpg(group, signal.SIGSTOP)
        try:
            yield
        finally:
            os.killpg(group, signal.SIGCONT)


@contextlib.contextmanager
def ours(base: Path, password: str, args: argparse.Namespace) -> Iterator[Ours]:
    say(f"ours: starting the local stack ({base / 'ours'}) ...")
    try:
        with (
            postgres.stack_databases(args.database_url, keep=args.keep) as databases,
            launch_stack(
                base / "ours", admin_password=password, start_timeout=120, databases=databases
            ) as stack,
        ):
            url = stack.url("platform", "")
            server = (
                f"nginx gateway :{stack.ports['platform']} -> webhooks service, "
                f"{our_uvicorn_stack()}, {postgres.describe(args.database_url, stack.output())}; "
                "Valkey noeviction, AOF"
            )
            target = login("ours", url, password, server)
            yield Ours(target, create_webhook(target), stack)
    except StackStartError as exc:
        raise BenchError(f"our stack: {str(exc).splitlines()[0]}") from None


@contextlib.contextmanager
def reference(base: Path, password: str, args: argparse.Namespace) -> Iterator[tuple[Target, str]]:
    say(f"reference: preparing zenml[server]=={REFERENCE_VERSION} (cached) ...")
    try:
        venv = ensure_venv(
            f"zenml-server-{REFERENCE_VERSION}", f"zenml[server]=={REFERENCE_VERSION}"
        )
        with mariadb.reference_on_store(
            venv.python,
            base / "reference",
            args,
            port=_free_port(),
            password=password,
            start_timeout=420,
            access_log=False,
        ) as (server, store):
            stack = (
                f"ZenML {REFERENCE_VERSION}, {_uvicorn_stack(venv.python)}, {store.described}, "
                "access log off"
            )
            target = login("reference", server.url, password, stack)
            yield target, create_webhook(target)
    except mariadb.MariaDBError as exc:
        raise BenchError(f"reference database: {exc}") from None
    except ZenmlEnvError as exc:
        lines = str(exc).strip().splitlines()
        raise BenchError(f"reference: {lines[0]}\n" + "\n".join(lines[-8:])) from None


# ---------------------------------------------------------------------------------------------
# The run


def measure_counted(
    name: str,
    target: Target,
    path: str,
    args: argparse.Namespace,
    groups: Mapping[str, int] | None = None,
) -> Measured:
    """:func:`measure`, then check the server's own stats counted every 2xx it sent."""
    before = accepted_count(target, path)
    measured = measure(name, target.server_stack, target.base_url, path, args, groups)
    check_counted(target, path, before, [measured])
    return measured


def check_counted(target: Target, path: str, before: int, measured: Sequence[Measured]) -> None:
    """The server's own stats counted every 2xx of ``measured`` (since ``before``)."""
    if any(m.stuck for m in measured):
        return  # its stats cannot be read either
    counted = accepted_count(target, path) - before
    answered = sum(r.requests - r.non_2xx - r.socket_errors for m in measured for r in m.runs)
    names = " and ".join(m.name for m in measured)
    say(f"{names}: the stats count {counted} accepted (warm-ups included)")
    if counted < answered:
        raise BenchError(f"{names}: {answered} deliveries answered 2xx, {counted} counted")


def ours_lanes(running: Ours, args: argparse.Namespace) -> list[Lane]:
    """With the worker paused (the intake alone; the queue holds every accepted event,
    drained before the next run), and with it draining the queue meanwhile (as in use):
    under the stack's own fsync policy, or under each of ``--appendfsync``'s (named after
    it), the lanes of each kind side by side. Each run starts with an empty queue."""
    policies: list[str | None] = list(args.appendfsync) or [None]
    paused = [_paused_lane(running, args, policy) for policy in policies]
    return paused + [_draining_lane(running, args, policy) for policy in policies]


def _ours_measured(running: Ours, name: str, policy: str | None, worker: str) -> Measured:
    fsync = policy or running.appendfsync()
    label = f"{name} ({fsync})" if policy else name
    return Measured(label, f"{running.target.server_stack} {fsync}; {worker}")


def _prepared(running: Ours, args: argparse.Namespace, policy: str | None) -> Callable[[], None]:
    """Ahead of a run: an empty queue, then Valkey's fsync ``policy`` (if one is given)."""

    def prepare() -> None:
        wait_until_drained(running, args)
        if policy is not None:
            running.appendfsync(policy)

    return prepare


def _paused_lane(running: Ours, args: argparse.Namespace, policy: str | None) -> Lane:
    worker = "arq worker paused (SIGSTOP), events accumulate in the queue"
    paused = _ours_measured(running, "ours, worker paused", policy, worker)

    @contextlib.contextmanager
    def paused_then_drained() -> Iterator[None]:
        with running.worker_paused():
            yield
            backlog = running.queued()
        started = time.monotonic()
        wait_until_drained(running, args)
        paused.notes["drain"] = (
            f"{backlog} queued events drained in {time.monotonic() - started:.1f}s after SIGCONT"
        )

    target = running.target
    return Lane(
        paused,
        target.base_url,
        running.path,
        running.groups,
        around=paused_then_drained,
        before=_prepared(running, args, policy),
    )


def _draining_lane(running: Ours, args: argparse.Namespace, policy: str | None) -> Lane:
    draining = _ours_measured(running, "ours", policy, "arq worker draining the queue meanwhile")
    target = running.target
    return Lane(
        draining,
        target.base_url,
        running.path,
        running.groups,
        before=_prepared(running, args, policy),
    )


def wait_until_drained(running: Ours, args: argparse.Namespace) -> None:
    deadline = time.monotonic() + args.drain_timeout
    while (left := running.queued()) > 0:
        if time.monotonic() > deadline:
            raise BenchError(f"ours: {left} events still queued after {args.drain_timeout:g}s")
        time.sleep(0.5)


def _targets(text: str) -> list[str]:
    wanted = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in TARGETS]
    if unknown or not wanted:
        raise argparse.ArgumentTypeError(
            f"unknown target {', '.join(unknown) or text!r}; choose from {', '.join(TARGETS)}"
        )
    return [name for name in TARGETS if name in wanted]


def _policies(text: str) -> list[str]:
    wanted = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in APPENDFSYNC]
    if unknown or not wanted or len(set(wanted)) < len(wanted):
        raise argparse.ArgumentTypeError(
            f"{text!r}: name each of {', '.join(APPENDFSYNC)} at most once"
        )
    return wanted


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per run")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of warm-up")
    parser.add_argument("--runs", type=int, default=3, help="runs per target (median)")
    parser.add_argument("--pause", type=float, default=2.0, help="seconds between runs")
    parser.add_argument("--connections", type=int, default=32, help="concurrent senders")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument(
        "--only",
        type=_targets,
        default=list(TARGETS),
        metavar="TARGET[,TARGET]",
        help=f"measure only these targets (of {', '.join(TARGETS)})",
    )
    parser.add_argument(
        "--appendfsync",
        type=_policies,
        default=[],
        metavar="POLICY[,POLICY]",
        help=f"measure ours under each of these Valkey fsync policies (of "
        f"{', '.join(APPENDFSYNC)}) in turn, set before each run (default: the stack's own)",
    )
    parser.add_argument(
        "--drain-timeout", type=float, default=600.0, help="seconds to wait for the queue"
    )
    postgres.add_option(parser)
    mariadb.add_option(parser)
    parser.add_argument(
        "--keep",
        action="store_true",
        help="leave the servers' data dirs (and logs) and our databases after the run",
    )
    args = parser.parse_args(argv)
    if min(args.duration, args.runs, args.connections, args.threads) <= 0:
        parser.error("--duration, --runs, --connections and --threads must be positive")
    return args


def format_table(results: Sequence[Measured]) -> str:
    by_name = {m.name: m for m in results}
    # Like for like: ours goes through the gateway, so the ceiling that counts does too.
    ceiling = by_name.get("ceiling via gateway")
    reference = by_name.get("reference")
    lines = [
        "| target | accepted/s | p50 ms | p99 ms | non-2xx | socket errors "
        "| vs ceiling (gateway) | vs reference |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in results:
        rate = m.median("ok_per_second")
        to_ceiling = m.ratio_to(ceiling) if ceiling else None
        to_reference = m.ratio_to(reference) if reference else None
        vs_ceiling = f"{to_ceiling:.0%}" if to_ceiling is not None else "-"
        vs_reference = f"{to_reference:.1f}x" if to_reference is not None else "-"
        lines.append(
            f"| {m.name} | {rate:.0f} | {m.median('p50_ms'):.1f} | {m.median('p99_ms'):.1f} "
            f"| {sum(r.non_2xx for r in m.runs)} | {sum(r.socket_errors for r in m.runs)} "
            f"| {vs_ceiling} | {vs_reference} |"
        )
    return "\n".join(lines)


CPU_COLUMNS = ("service", "gateway", "valkey", "worker", "postgres", "launcher")


def format_cpu_table(results: Sequence[Measured]) -> str:
    """CPU milliseconds per accepted request, per process (medians over the runs)."""
    lines = [
        "| target | " + " | ".join(CPU_COLUMNS) + " | all of these | wrk |",
        "|---|" + "---:|" * (len(CPU_COLUMNS) + 2),
    ]
    for m in results:
        if not m.runs or not m.runs[0].cpu:
            continue
        per_request = m.cpu_ms_per_request()
        cells = [f"{per_request[c]:.3f}" if c in per_request else "-" for c in CPU_COLUMNS]
        wrk = statistics.median(
            1000 * r.wrk_cpu / max(1, r.requests - r.non_2xx - r.socket_errors) for r in m.runs
        )
        lines.append(
            f"| {m.name} | {' | '.join(cells)} | {sum(per_request.values()):.3f} | {wrk:.3f} |"
        )
    return "\n".join(lines)


def format_policy_shares(results: Sequence[Measured], policies: Sequence[str]) -> str:
    """Each of ours' lanes under another fsync policy, as a share of the first policy's
    accepted/s (the median of the rounds' ratios) and p99."""
    by_name = {m.name: m for m in results}
    first, *others = policies
    lines = []
    for name in ("ours, worker paused", "ours"):
        base = by_name.get(f"{name} ({first})")
        for policy in others:
            other = by_name.get(f"{name} ({policy})")
            share = other.ratio_to(base) if other and base else None
            if other is None or base is None or share is None:
                continue
            lines.append(
                f"{name}: appendfsync {policy} accepted {share:.0%} of {first}'s per second, "
                f"p99 {other.median('p99_ms'):.1f} ms against {base.median('p99_ms'):.1f} ms"
            )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if shutil.which("wrk") is None:
        raise BenchError("wrk is not installed (apt-get install -y wrk)")
    wanted: list[str] = args.only
    base = Path(tempfile.mkdtemp(prefix="bench-webhooks-"))
    password = f"Bench-{secrets.token_urlsafe(12)}"
    results: list[Measured] = []
    load_before = os.getloadavg()[0]
    try:
        with contextlib.ExitStack() as servers:
            lanes: list[Lane] = []
            if "ceiling" in wanted:
                bare = servers.enter_context(ceiling(base))
                direct = Measured("ceiling", f"{bare.stack}, direct")
                gateway = Measured(
                    "ceiling via gateway", f"{bare.stack}, behind ours' nginx config"
                )
                lanes += [
                    Lane(direct, bare.direct, bare.path, {"service": bare.groups["service"]}),
                    Lane(gateway, bare.gateway, bare.path, bare.groups),
                ]
            running: Ours | None = None
            mine: list[Lane] = []
            if "ours" in wanted:
                running = servers.enter_context(ours(base, password, args))
                mine = ours_lanes(running, args)
                lanes += mine
                before = accepted_count(running.target, running.path)
            measure_in_rounds(lanes, args)
            results += [lane.measured for lane in lanes]
            if running is not None:
                check_counted(running.target, running.path, before, [m.measured for m in mine])
                wait_until_drained(running, args)
        if "reference" in wanted:
            with reference(base, password, args) as (target, path):
                results.append(measure_counted("reference", target, path, args))
    finally:
        if args.keep:
            say(f"kept the servers' data dirs and logs in {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    print()
    print(
        f"signed custom webhook intake, {args.connections} concurrent senders (wrk, "
        f"{args.threads} threads, one connection each), a unique delivery id per request; "
        f"median of {args.runs} x {args.duration:g}s after a {args.warmup:g}s warm-up; the "
        "ceiling and ours measured in turn, one run each a round, a ratio being the median "
        "of the rounds' ratios"
    )
    print(format_table(results))
    print()
    print(
        "The intake's target (60% of the ceiling via the gateway) is judged on "
        "'ours, worker paused': the intake alone, every event still written durably to the "
        "queue before the answer (the worker drains them after, timed below). 'ours' has "
        "the worker draining at the same time on the same 2 cores, as a single-machine "
        "deployment would."
    )
    print()
    print("CPU milliseconds per accepted request, by process (from /proc, during the runs):")
    print(format_cpu_table(results))
    print()
    if len(args.appendfsync) > 1:
        print(format_policy_shares(results, args.appendfsync))
        print()
    for m in results:
        cpu = statistics.median(r.wrk_cpu / r.seconds for r in m.runs) if m.runs else 0.0
        notes = "".join(f"; {note}" for note in m.notes.values())
        print(f"{m.name}: {m.stack}{notes} (wrk used {cpu:.2f} CPU s per s)")
        if m.stuck:
            print(f"{m.name}: {m.stuck}; the table shows the runs before")
    print(f"{os.cpu_count()} cores; load average (1 min) before: {load_before:.2f}, "
          f"after: {os.getloadavg()[0]:.2f}")  # fmt: skip
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return run(args)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; every server was stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
