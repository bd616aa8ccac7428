"""The stack, one process at a time: each started, killed and restarted on its own,
configured as the launcher configures it (``deploy/local``)."""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import redis

from bench.tracking import BenchError, say
from bench.webhooks import started
from deploy.config import Service, Stack
from deploy.local import datadir, gateway
from deploy.local.environment import service_environment
from deploy.local.options import Options, parse_options
from deploy.local.secrets import StackSecrets, load_or_create
from tests.support.processes import RunningService, pick_stack_ports, run_service
from tests.support.redis_server import RestartableValkey

WEB = ("identity", "tracking", "webhooks")  # the issuer first
WORKER = "webhooks-worker"


def valkey_options(stack: Stack) -> tuple[str, ...]:
    """As the launcher runs Valkey (deploy/local/launcher.py valkey_command): durable
    queues, fsynced as stack.toml's ``[valkey] appendfsync`` says."""
    return ("--appendonly", "yes", "--appendfsync", stack.valkey_appendfsync,
            "--maxmemory-policy", "noeviction")  # fmt: skip


@dataclass
class SoakStack:
    """The stack's processes, each started, killed and restarted on its own."""

    options: Options
    secrets: StackSecrets
    env: dict[str, dict[str, str]]  # service name -> its environment
    valkey: RestartableValkey
    logs: Path
    web: dict[str, contextlib.ExitStack] = field(default_factory=dict)
    running: dict[str, RunningService] = field(default_factory=dict)
    workers: dict[int, contextlib.ExitStack] = field(default_factory=dict)
    worker_pids: dict[int, int] = field(default_factory=dict)
    worker_logs: dict[int, Path] = field(default_factory=dict)
    starts: Counter[str] = field(default_factory=Counter)

    @property
    def gateway_url(self) -> str:
        return f"http://127.0.0.1:{self.options.ports.entrypoints['platform']}"

    def start_web(self, name: str) -> None:
        """Start (again) ``name`` on its port; return once it answers ``/health``."""
        service = self.options.stack.service(name)
        self.starts[name] += 1
        running = contextlib.ExitStack()
        self.running[name] = running.enter_context(
            run_service(
                service.module,
                self.env[name],
                self.logs / f"{name}.log",
                port=self.options.ports.services[name],
                start_timeout=120.0,
            )
        )
        self.web[name] = running

    def stop_web(self, name: str, how: signal.Signals) -> None:
        """Send ``name`` ``how`` (SIGKILL: a crash; SIGTERM: uvicorn finishes the requests
        under way first) and reap it."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.running.pop(name).process.pid, how)
        self.web.pop(name).close()

    def start_worker(self, n: int) -> None:
        self.starts[f"worker-{n}"] += 1
        log = self.logs / f"worker-{n}.{self.starts[f'worker-{n}']}.log"
        running = contextlib.ExitStack()
        self.worker_pids[n] = running.enter_context(
            started(
                [sys.executable, "-m", self.options.stack.service(WORKER).module],
                log,
                f"worker {n}",
                ready=lambda: True,
                env=self.env[WORKER],
            )
        )
        self.workers[n] = running
        self.worker_logs[n] = log

    def kill_worker(self, n: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.worker_pids.pop(n), signal.SIGKILL)
        self.workers.pop(n).close()

    def check_alive(self) -> None:
        """:class:`BenchError` when a process the chaos did not kill has exited (a broken
        build would otherwise only show as a queue that never drains)."""
        for name, service in list(self.running.items()):
            if service.process.poll() is not None:
                raise BenchError(f"{name} exited on its own:\n{service.log_tail()}")
        for n, pid in list(self.worker_pids.items()):
            if exited(pid):
                tail = self.worker_logs[n].read_text(errors="replace").splitlines()[-20:]
                raise BenchError(f"worker {n} exited on its own:\n" + "\n".join(tail))

    def close(self) -> None:
        for n in list(self.workers):
            self.workers.pop(n).close()
        for name in reversed(list(self.web)):
            self.web.pop(name).close()


def exited(pid: int) -> bool:
    """Whether our child ``pid`` has exited (a zombie until reaped, or gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    # After the command name (in parentheses, may contain spaces): the state.
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def environments(
    options: Options,
    stack_secrets: StackSecrets,
    valkey_url: str,
    databases: Mapping[str, str],
    password: str,
) -> dict[str, dict[str, str]]:
    """Each process's environment as the launcher makes it, on this Valkey, these
    databases (web service -> URL; workers use their owner's) and admin password."""
    environ = {**os.environ, "DEFAULT_ADMIN_PASSWORD": password}
    found: dict[str, dict[str, str]] = {}
    for name in (*WEB, WORKER):
        service: Service = options.stack.service(name)
        owner = options.stack.service(service.owner)
        prefix = service.env_prefix or owner.env_prefix
        env = service_environment(options, service, stack_secrets, environ)
        env[f"{prefix}REDIS_URL"] = valkey_url
        env[f"{prefix}DATABASE_URL"] = databases[owner.name]
        found[name] = env
    return found


def worker_settings(args: argparse.Namespace) -> dict[str, str]:
    return {"WORKER_JOB_TIMEOUT": f"PT{args.job_timeout:g}S", **dict(args.worker_env)}


@contextlib.contextmanager
def soak_stack(
    base: Path, args: argparse.Namespace, databases: Mapping[str, str], password: str
) -> Iterator[SoakStack]:
    """The stack started in the launcher's order (Valkey, identity, the other services,
    the workers, the gateway) and stopped on exit."""
    data_dir = base / "stack"
    offset, ports = pick_stack_ports()
    argv = ["--data-dir", str(data_dir), "--port-offset", str(offset)]
    argv += [arg for name, port in ports.items() for arg in (f"--{name}-port", str(port))]
    options = parse_options(argv, {})
    datadir.prepare(data_dir)
    logs = base / "logs"
    logs.mkdir()
    stack_secrets, _ = load_or_create(data_dir, options.stack)
    with contextlib.ExitStack() as running:
        valkey = running.enter_context(
            RestartableValkey(data_dir / "valkey", *valkey_options(options.stack))
        )
        env = environments(options, stack_secrets, valkey.url, databases, password)
        env[WORKER] |= worker_settings(args)
        stack = SoakStack(options, stack_secrets, env, valkey, logs)
        running.callback(stack.close)
        say(f"soak: starting the stack in {base} ...")
        issuer, *others = WEB
        stack.start_web(issuer)
        with concurrent.futures.ThreadPoolExecutor(len(others)) as pool:
            for done in [pool.submit(stack.start_web, name) for name in others]:
                done.result()
        for n in range(args.workers):
            stack.start_worker(n)
        prefix, config = gateway.write_config(options)
        running.enter_context(
            started(
                gateway.command(gateway.nginx_binary(), prefix, config),
                logs / "gateway.log",
                "the gateway",
                ready=lambda: _answers(stack.gateway_url + "/health"),
            )
        )
        yield stack


def _answers(url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(url, timeout=2.0, trust_env=False).status_code == 200
    return False


def backlog(valkey_url: str, queue: str) -> str:
    """What is left of the work: jobs queued or deferred (when due), jobs in progress;
    empty when nothing is."""
    client = redis.Redis.from_url(valkey_url)
    try:
        jobs: list[tuple[bytes, float]] = client.zrange(queue, 0, -1, withscores=True)  # type: ignore[assignment]
        running = sum(1 for _ in client.scan_iter("arq:in-progress:*", count=1000))
    finally:
        client.close()
    if not jobs and not running:
        return ""
    now_ms = time.time() * 1000
    due = sorted((score - now_ms) / 1000 for _, score in jobs)
    when = f" (due in {due[0]:+.0f} s to {due[-1]:+.0f} s)" if due else ""
    return f"{len(jobs)} jobs queued{when}, {running} in progress"


async def wait_for_drain(stack: SoakStack, within: float) -> tuple[float | None, str]:
    """When (monotonic) the queue was found drained, or ``None`` after ``within`` seconds
    with what was left."""
    namespace = stack.env[WORKER].get("REDIS_NAMESPACE", "platform")
    queue = f"{namespace}:webhooks:events"
    deadline = time.monotonic() + within
    while True:
        stack.check_alive()
        left = await asyncio.to_thread(backlog, stack.valkey.url, queue)
        if not left:
            return time.monotonic(), ""
        if time.monotonic() > deadline:
            return None, left
        await asyncio.sleep(0.5)
