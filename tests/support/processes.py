"""The local stack launched as a real process, and finding what it started (/proc)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from deploy.local import postgres
from tests.support.databases import Databases
from tests.support.postgres_server import scratch_directory
from tests.support.redis_server import free_port
from tests.support.zenml_env import stop_process

REPO_ROOT = Path(__file__).resolve().parents[2]
STACK_FILE = REPO_ROOT / "deploy" / "stack.toml"
# What chooses the first accounts' passwords, under every name the launcher takes.
PASSWORDS = frozenset(
    {
        "DEFAULT_ADMIN_PASSWORD",
        "SERVER_DEFAULT_ACCOUNT_PASSWORD",
        "SERVICE_SERVER_DEFAULT_ACCOUNT_PASSWORD",
        "KITARU_SERVER_DEFAULT_ACCOUNT_PASSWORD",
    }
)


@dataclass
class LaunchedStack:
    """A running ``python -m deploy.local``: its log, ports and children's process groups."""

    process: subprocess.Popen[bytes]
    data_dir: Path
    log: Path
    ports: dict[str, int]
    children: dict[str, int]
    replica_ports: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Web service name → the port of each of its processes (replicas), first first."""
    metrics_ports: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Service (web or worker) name → each process's Prometheus metrics port."""

    def url(self, entrypoint: str, path: str) -> str:
        return f"http://127.0.0.1:{self.ports[entrypoint]}{path}"

    def replica_url(self, service: str, replica: int, path: str) -> str:
        """``path`` on one process of a web service, not through the gateway (``replica``
        counts from 1, as the launcher names them: ``tracking#1``)."""
        return f"http://127.0.0.1:{self.replica_ports[service][replica - 1]}{path}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.output().splitlines()[-lines:])


def live_processes(groups: set[int], marker: str) -> list[str]:
    """Non-zombie processes in one of ``groups`` or whose command line mentions ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # exited while we looked
        # Fields after the command name, which is in parentheses and may contain spaces.
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if state != "Z" and (int(pgrp) in groups or marker in cmdline):
            found.append(f"{entry.name}: {cmdline.strip()}")
    return found


def process_environment(pid: int) -> dict[str, str]:
    """The environment process ``pid`` was started with (Linux: ``/proc``)."""
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {key.decode(): value.decode() for key, value in pairs}


def port_free(port: int) -> bool:
    """Whether a listener could bind ``port`` on loopback now."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


BANNER = "the stack is up:"
"""The first line of the launcher's banner (deploy/local/banner.py)."""


class StackStartError(RuntimeError):
    """The launched stack did not come up; the message carries the launcher's last lines."""


def below_ephemeral_ports(span: int) -> int:
    """A random start for ``span`` consecutive ports below the kernel's ephemeral range
    (from 32768 on Linux), where outgoing connections (the tests' own, to PostgreSQL and
    Redis) take source ports at random and may take one between our check and the bind."""
    return random.randrange(10000, 32768 - span)


# Replica k (from 1) of a web service listens at its port + REPLICA_PORT_STRIDE * (k - 1).
REPLICA_PORT_STRIDE = 100


def web_ports(
    stack_file: Path = STACK_FILE,
    replicas: Mapping[str, int] | None = None,
    *,
    key: str = "port",
) -> dict[str, tuple[int, ...]]:
    """Each service's replica ports before ``--port-offset``, with ``replicas``
    replacing the stack file's counts (as ``--replicas`` does): those of ``key``, the web
    services' ``port`` or every process's ``metrics_port``."""
    stack = tomllib.loads(stack_file.read_text())
    counts = replicas or {}
    return {
        s["name"]: tuple(
            s[key] + REPLICA_PORT_STRIDE * k
            for k in range(counts.get(s["name"], s.get("replicas", 1)))
        )
        for s in stack["service"]
        if key in s
    }


def pick_stack_ports(
    stack_file: Path = STACK_FILE, replicas: Mapping[str, int] | None = None
) -> tuple[int, dict[str, int]]:
    """A port offset with every internal port free (every replica's, ``replicas`` as given
    to ``--replicas``), and one free gateway port per entrypoint.

    Read directly from ``stack.toml`` (not through ``deploy.config``): callers drive the
    launcher as a user would.
    """
    stack = tomllib.loads(stack_file.read_text())
    web = web_ports(stack_file, replicas)
    web |= {
        f"{name} metrics": p
        for name, p in web_ports(stack_file, replicas, key="metrics_port").items()
    }
    internal = [stack["valkey"]["port"], *(p for ports in web.values() for p in ports)]
    span = max([*internal, *(e["port"] + 3 for e in stack["entrypoint"])]) + 1
    for _ in range(200):
        offset = below_ephemeral_ports(span)
        gateway = {e["name"]: e["port"] + offset + 3 for e in stack["entrypoint"]}
        ports = [p + offset for p in internal] + list(gateway.values())
        if len(set(ports)) == len(ports) and all(port_free(p) for p in ports):
            return offset, gateway
    raise StackStartError("no free port range for the stack")


@contextlib.contextmanager
def launch_stack(
    data_dir: Path,
    *,
    admin_password: str | None,
    log: Path | None = None,
    start_timeout: float = 90.0,
    stop_timeout: float = 20.0,
    extra_env: Mapping[str, str] | None = None,
    databases: Mapping[str, str] | None = None,
    replicas: Mapping[str, int] | None = None,
) -> Iterator[LaunchedStack]:
    """Run ``python -m deploy.local`` on shifted ports with ``data_dir``; stop it on exit.

    ``admin_password`` is the platform's first admin's (``None``: identity generates one);
    the first passwords of the caller's own environment are never passed on.

    ``databases`` gives each web service (by name) its own database URL, on a server the
    caller runs (:func:`stack_databases`); without it the launcher starts the embedded
    PostgreSQL with its data in ``data_dir`` (the ``<SERVICE>_DATABASE_URL`` variables of
    the caller's own environment are never passed on either).

    ``replicas``: ``--replicas`` counts by service name (``{"tracking": 2}``); the
    stack's :attr:`LaunchedStack.replica_ports` say where each replica listens.

    Waits until the platform entrypoint answers ``/health`` (the launcher starts the gateway
    last, so the whole stack is up then). Raises :class:`StackStartError` with the log's tail
    otherwise. On exit: SIGTERM, SIGKILL after ``stop_timeout``, then SIGKILL to every child
    process group the launcher recorded. The launcher runs in its own session, so a Ctrl-C in
    the caller's terminal reaches it only through this cleanup, in order.
    """
    log = log or data_dir.parent / f"{data_dir.name}-launcher.log"
    offset, ports = pick_stack_ports(replicas=replicas)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("STACK_") and not k.endswith("_DATABASE_URL") and k not in PASSWORDS
    }
    if admin_password is not None:
        env["DEFAULT_ADMIN_PASSWORD"] = admin_password
    env.update(extra_env or {})
    for name, url in (databases or {}).items():
        env[f"{name.upper().replace('-', '_')}_DATABASE_URL"] = url
    argv = [sys.executable, "-m", "deploy.local", "--data-dir", str(data_dir),
            "--port-offset", str(offset)]  # fmt: skip
    argv += [arg for name, port in ports.items() for arg in (f"--{name}-port", str(port))]
    argv += [arg for name, n in (replicas or {}).items() for arg in ("--replicas", f"{name}={n}")]
    with log.open("wb") as output:
        process = subprocess.Popen(
            argv,
            cwd=REPO_ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    replica_ports = {
        name: tuple(port + offset for port in web)
        for name, web in web_ports(replicas=replicas).items()
    }
    metrics_ports = {
        name: tuple(port + offset for port in each)
        for name, each in web_ports(replicas=replicas, key="metrics_port").items()
    }
    running = LaunchedStack(
        process,
        data_dir,
        log,
        ports,
        children={},
        replica_ports=replica_ports,
        metrics_ports=metrics_ports,
    )
    try:
        wait_for_platform(running, start_timeout)
        with contextlib.suppress(OSError, ValueError):
            pids = json.loads((data_dir / "run" / "processes.json").read_text())
            running.children = dict(pids["children"])
        yield running
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=stop_timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for pid in running.children.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        if databases is None:
            remove_relocated_cluster(data_dir)


def remove_relocated_cluster(data_dir: Path) -> None:
    """Remove the embedded PostgreSQL's cluster of a stopped stack with ``data_dir`` when it
    was kept outside it (root, behind a root-only directory: see
    :func:`deploy.local.postgres.cluster_directory`)."""
    cluster = postgres.cluster_directory(data_dir / "postgres")
    if not cluster.is_relative_to(data_dir):
        shutil.rmtree(cluster, ignore_errors=True)


@contextlib.contextmanager
def stack_for_tests(
    tmp_path_factory: pytest.TempPathFactory, name: str, **options: Any
) -> Iterator[LaunchedStack]:
    """:func:`launch_stack` (``options``) on a new temporary data dir called ``name``, for a
    module's ``stack`` fixture: a stack that does not start fails the test with its log.
    Without ``databases``, the data dir (the embedded PostgreSQL's too) is in a
    :func:`~tests.support.postgres_server.scratch_directory`, which that server's user
    can reach."""
    with contextlib.ExitStack() as held:
        if options.get("databases") is None:
            data_dir = held.enter_context(scratch_directory()) / name
        else:
            data_dir = tmp_path_factory.mktemp(name)
        try:
            running = held.enter_context(launch_stack(data_dir, **options))
        except StackStartError as exc:
            pytest.fail(f"the stack did not start: {exc}", pytrace=False)
        yield running


@contextlib.asynccontextmanager
async def stack_databases(
    databases: Databases, *, migrated: bool = True
) -> AsyncIterator[dict[str, str]]:
    """A database on the tests' server for each web service of the stack, for
    :func:`launch_stack`'s ``databases``: at the service's head, lent from the pool (its
    start-up then has nothing to migrate: no migration child, seconds saved per stack), or
    new and empty (``migrated=False``: the service migrates it at start); given back on
    exit."""
    stack = tomllib.loads(STACK_FILE.read_text())
    async with contextlib.AsyncExitStack() as held:
        yield {
            service["name"]: await held.enter_async_context(
                databases.postgres(service["module"] if migrated else None)
            )
            for service in stack["service"]
            if service["kind"] == "web"
        }


def wait_for_platform(stack: LaunchedStack, timeout: float) -> None:
    """Wait until the stack's gateway answers ``/health`` and the launcher has printed its
    banner (``the stack is up:``, which it prints once every process is ready, after the
    gateway may already answer: a test reading the banner must not race it);
    :class:`StackStartError` with the log's tail when the launcher exits or ``timeout``
    passes first."""
    deadline = time.monotonic() + timeout
    healthy = False
    with httpx.Client(timeout=2.0, trust_env=False) as client:
        while time.monotonic() < deadline:
            if stack.process.poll() is not None:
                raise StackStartError(
                    f"the launcher exited with {stack.process.returncode}:\n{stack.log_tail()}"
                )
            if not healthy:
                with contextlib.suppress(httpx.HTTPError):
                    healthy = client.get(stack.url("platform", "/health")).status_code == 200
            if healthy and BANNER in stack.output():
                return
            time.sleep(0.25)
    what = "printed its banner" if healthy else "answered"
    raise StackStartError(f"the stack had not {what} within {timeout:.0f}s:\n{stack.log_tail()}")


@dataclass
class RunningService:
    """One service run as ``python -m <package>`` on a loopback port."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


@contextlib.contextmanager
def run_service(
    package: str,
    env: Mapping[str, str],
    log: Path,
    *,
    port: int | None = None,
    start_timeout: float = 60.0,
) -> Iterator[RunningService]:
    """Start ``python -m package --port P`` with ``env`` added to this environment, wait
    for ``/health``, and stop it (SIGTERM, then SIGKILL) on exit."""
    port = port or free_port()
    with log.open("ab") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", package, "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO_ROOT,
            env={**os.environ, **env},
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    service = RunningService(process, f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + start_timeout
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while True:
                if process.poll() is not None:
                    raise StackStartError(f"{package} exited:\n{service.log_tail()}")
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(f"{service.url}/health").status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise StackStartError(f"{package} did not answer:\n{service.log_tail()}")
                time.sleep(0.1)
        yield service
    finally:
        stop_process(process)
