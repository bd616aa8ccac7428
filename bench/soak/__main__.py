"""``python -m bench.soak``: see :mod:`bench.soak`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import httpx
from sqlalchemy.engine import make_url

from bench.soak.chaos import Outages, run_chaos, schedule, watch
from bench.soak.options import parse_args
from bench.soak.report import Report
from bench.soak.stack import WEB, SoakStack, soak_stack, wait_for_drain
from bench.soak.traffic import Hook, execution_statuses, runs_by_delivery, send_all, set_up
from bench.tracking import BenchError, Target, _terminate, login, say
from tests.support.databases import Databases
from tests.support.postgres_server import postgres_for_tests
from tests.support.processes import REPO_ROOT, StackStartError

# How long the final reading is tried again (see read_results).
READ_WITHIN = 60.0


def describe(args: argparse.Namespace) -> str:
    rate = args.deliveries / args.duration
    return (
        f"{args.deliveries} signed custom deliveries at {rate:.1f}/s over {args.duration:g} s "
        f"through the gateway; {args.workers} webhook workers (job timeout "
        f"{args.job_timeout:g} s); chaos: {args.kills} worker SIGKILLs (restarted after "
        f"{args.restart_after:g} s), Valkey SIGKILLed and restarted after {args.valkey_down:g} "
        f"s, {' then '.join(args.away)} stopped ({args.stop_signal.name}) and away "
        f"{args.outage:g} s each; "
        f"PostgreSQL {'at ' + where(args.database_url) if args.database_url else 'embedded'}; "
        f"seed {args.seed}"
    )


def where(url: str) -> str:
    """A server's host and port (its URL may hold a password)."""
    parsed = make_url(url)
    return f"{parsed.host or 'localhost'}:{parsed.port or 5432}"


async def soak(stack: SoakStack, target: Target, password: str, args: argparse.Namespace) -> Report:
    hook = await asyncio.to_thread(set_up, target, f"soak-{secrets.token_hex(3)}")
    outages = Outages()
    steps = schedule(args)
    say(f"soak: {describe(args)}")
    limits = httpx.Limits(max_connections=args.senders, max_keepalive_connections=args.senders)
    async with httpx.AsyncClient(timeout=10.0, limits=limits, trust_env=False) as http:
        try:
            async with asyncio.TaskGroup() as group:
                chaos = group.create_task(run_chaos(stack, steps, outages, args))
                sending = group.create_task(
                    send_all(http, hook, f"soak-{secrets.token_hex(4)}", args)
                )
                group.create_task(watch(stack, [chaos, sending]))
        except* BenchError as failed:
            raise failed.exceptions[0] from None
    answers, killed = sending.result(), chaos.result()
    say("soak: the last outage is over; waiting for the queue to drain")
    drained_at, left = await wait_for_drain(stack, args.drain_timeout)
    runs, (executions, errors) = await read_results(target, password, hook)
    report = Report.of(answers, runs, outages, drained_at)
    report.backlog, report.workers_killed = left, killed
    report.executions, report.errors = executions, errors
    return report


async def read_results(
    target: Target, password: str, hook: Hook, within: float = READ_WITHIN
) -> tuple[Counter[str], tuple[Counter[str], list[str]]]:
    """The runs by delivery id and the trigger's executions, read with a new token (the
    first may have expired during a long run), tried again for ``within`` seconds: a
    tracking restarted while identity was away refuses tokens until it has fetched
    identity's keys (at most one try in 5 s)."""
    deadline = time.monotonic() + within
    while True:
        try:
            fresh = await asyncio.to_thread(
                login, "ours", target.base_url, password, target.server_stack
            )
            runs = await asyncio.to_thread(runs_by_delivery, fresh, hook.snapshot_id)
            return runs, await asyncio.to_thread(execution_statuses, fresh, hook.trigger_id)
        except BenchError as exc:
            if time.monotonic() > deadline:
                raise
            say(f"soak: cannot read the results yet ({exc}); trying again")
            await asyncio.sleep(2.0)


async def postgres_databases(pool: Databases, into: contextlib.AsyncExitStack) -> dict[str, str]:
    """A new database for each web service (dropped on exit; they migrate themselves)."""
    return {name: await into.enter_async_context(pool.postgres(None)) for name in WEB}


async def run(args: argparse.Namespace, base: Path) -> Report:
    """Start the stack in ``base`` (on the server ``--database-url`` names, else on an
    embedded one), soak it, stop it; the report."""
    password = f"Soak-{secrets.token_urlsafe(12)}"
    try:
        async with contextlib.AsyncExitStack() as held:
            server = args.database_url or held.enter_context(postgres_for_tests())
            pool = Databases(server)
            await pool.drop_abandoned()
            databases = await postgres_databases(pool, held)
            with soak_stack(base, args, databases, password) as stack:
                target = await asyncio.to_thread(
                    login, "ours", stack.gateway_url, password, "the soak's stack"
                )
                return await soak(stack, target, password, args)
    except StackStartError as exc:
        raise BenchError(f"the stack did not start: {exc}") from None


def machine() -> str:
    """The commit and the machine, for the report's first line."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],  # noqa: S607
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    cpu = "?"
    with contextlib.suppress(OSError):
        models = re.findall(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
        cpu = models[0] if models else cpu
    return (
        f"commit {commit or '?'}, {os.cpu_count()} cores ({cpu}), Python {sys.version.split()[0]}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    base = Path(tempfile.mkdtemp(prefix="soak-"))
    started_at, where = time.monotonic(), machine()  # the commit that runs, not a later one
    try:
        report = asyncio.run(run(args, base))
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; every process was stopped", file=sys.stderr)
        return 130
    finally:
        if args.keep:
            say(f"soak: kept the data dir and logs in {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"soak report, {when}, {time.monotonic() - started_at:.0f} s in all; {where}")
    print(describe(args))
    for line in report.lines():
        print(line)
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
