"""Command line and environment of the local launcher, resolved into :class:`Options`.

Every flag has an environment twin (``STACK_...``), so ``make run`` can be configured
without editing the Makefile. One ``--<entrypoint>-port`` flag exists per entrypoint of
the stack file, which is why the stack file is read before the full parser is built.
``--replicas NAME=N`` runs more than one process of a service (replica k of a web service
on its port + 100 (k - 1)).
``exec`` takes the same flags, so that a command run with a service's environment finds
the data dir and ports the stack runs with.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from deploy.config import DEFAULT_STACK_FILE, Service, Stack, StackConfigError, load_stack

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA_DIR = REPO_ROOT / ".local"


class UsageError(Exception):
    """A bad flag or environment value; reported as one line with exit code 2."""


@dataclass(frozen=True)
class PortPlan:
    """Every port the stack binds, after offsets and overrides."""

    valkey: int
    postgres: int
    services: Mapping[str, int]
    """Web service name → its (first replica's) port: where the other services call it."""
    entrypoints: Mapping[str, int]
    processes: Mapping[str, int]
    """Web service process (``tracking``, or ``tracking#2`` of several replicas) → port."""
    metrics: Mapping[str, int] = field(default_factory=dict)
    """Process (web or worker replica) → the port of its Prometheus metrics."""

    def labelled(self) -> list[tuple[str, int]]:
        """(what, port) pairs, for checks and messages."""
        return [
            ("valkey", self.valkey),
            ("postgres", self.postgres),
            *((f"service {name}", port) for name, port in self.processes.items()),
            *((f"metrics of {name}", port) for name, port in self.metrics.items()),
            *((f"gateway entrypoint {name}", port) for name, port in self.entrypoints.items()),
        ]


@dataclass(frozen=True)
class Options:
    """What one run of the launcher does."""

    stack: Stack
    data_dir: Path
    listen: str
    port_offset: int
    ports: PortPlan
    ready_timeout: float
    log_json: bool
    database_url: str | None = None
    """An existing PostgreSQL server the services' databases are on (created there when
    missing), instead of the embedded one."""


@dataclass(frozen=True)
class Command:
    """What ``python -m deploy.local exec`` runs: ``python -m <service's module> ARGS``
    with the environment the launcher gives the service under ``options``."""

    options: Options
    service: Service
    args: tuple[str, ...]


def parse_options(
    argv: Sequence[str], environ: Mapping[str, str], *, for_exec: bool = False
) -> Options:
    """Parse flags (falling back to ``STACK_*`` variables); :class:`UsageError` if bad.
    ``for_exec``: the same flags, with ``exec``'s help."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--stack", type=Path, default=environ.get("STACK_FILE", DEFAULT_STACK_FILE))
    known, _ = pre.parse_known_args(argv)
    stack_file = Path(known.stack)
    stack = load_stack(stack_file)

    parser = _parser(stack, stack_file, environ, for_exec=for_exec)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its message
        if exc.code in (0, None):
            raise
        raise UsageError("invalid arguments (see --help)") from None
    offset = _int(args.port_offset, "--port-offset", low=-60000, high=60000)
    overrides = {
        e.name: _int(getattr(args, _dest(e.name)), f"--{e.name}-port", low=1, high=65535)
        for e in stack.entrypoints
    }
    timeout = _int(args.ready_timeout, "--ready-timeout", low=1, high=3600)
    given = args.replicas or [environ.get("STACK_REPLICAS", "")]
    try:
        stack = stack.with_replicas(parse_replicas(given))
    except StackConfigError as exc:
        raise UsageError(str(exc)) from None
    return Options(
        stack=stack,
        data_dir=Path(args.data_dir).expanduser().resolve(),
        listen=args.listen,
        port_offset=offset,
        ports=plan_ports(stack, offset, overrides),
        ready_timeout=float(timeout),
        log_json=args.log_json,
        database_url=_server_url(args.database_url),
    )


def parse_exec(argv: Sequence[str], environ: Mapping[str, str]) -> Command:
    """``exec [flags] SERVICE [ARGS ...]``: the launcher's flags, then the command."""
    flags, command = split_command(argv)
    options = parse_options(flags, environ, for_exec=True)
    if not command:
        raise UsageError(f"name a service: exec [flags] SERVICE [ARGS ...] ({_names(options)})")
    name, *args = command
    try:
        service = options.stack.service(name)
    except KeyError:
        raise UsageError(f"no service {name!r} in the stack ({_names(options)})") from None
    return Command(options=options, service=service, args=tuple(args))


def split_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``exec``'s arguments as (the launcher's flags, ``[SERVICE, *ARGS]``).

    SERVICE is the first argument that is neither a flag nor a flag's value (every flag
    but :data:`FLAGS_WITHOUT_VALUE` takes one, as ``--flag VALUE`` or ``--flag=VALUE``), or
    whatever follows ``--``. Everything after it is the command's, flags included.
    """
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg == "--":
            return list(argv[:index]), list(argv[index + 1 :])
        if not arg.startswith("-"):
            break
        index += 1 if "=" in arg or arg in FLAGS_WITHOUT_VALUE else 2
    return list(argv[:index]), list(argv[index:])


def _names(options: Options) -> str:
    return "one of: " + ", ".join(s.name for s in options.stack.services)


def parse_replicas(values: Sequence[str]) -> dict[str, int]:
    """``--replicas`` values (each ``NAME=N`` or several, comma-separated) as counts by
    service name, the last given winning; names and counts are checked by
    :meth:`~deploy.config.Stack.with_replicas`."""
    counts: dict[str, int] = {}
    for value in values:
        for item in value.split(","):
            if not item.strip() and not value.strip():
                continue  # an empty STACK_REPLICAS
            name, equals, count = (part.strip() for part in item.partition("="))
            if not name or not equals:
                raise UsageError(f"--replicas takes NAME=N[,NAME=N ...], not {value!r}")
            try:
                counts[name] = int(count)
            except ValueError:
                raise UsageError(
                    f"--replicas {name}: the count must be a whole number, not {count!r}"
                ) from None
    return counts


def plan_ports(stack: Stack, offset: int, entrypoints: Mapping[str, int]) -> PortPlan:
    """Internal ports shifted by ``offset`` (every replica's); entrypoint ports as given."""
    plan = PortPlan(
        valkey=stack.valkey_port + offset,
        postgres=stack.postgres_port + offset,
        services={s.name: s.replica_ports(offset)[0] for s in stack.web_services},
        entrypoints=dict(entrypoints),
        processes={
            name: port
            for s in stack.web_services
            for name, port in zip(s.replica_names(), s.replica_ports(offset), strict=True)
        },
        metrics={
            name: port
            for s in stack.services
            for name, port in zip(s.replica_names(), s.replica_metrics_ports(offset), strict=False)
        },
    )
    seen: dict[int, str] = {}
    for what, port in plan.labelled():
        if not 1 <= port <= 65535:
            raise UsageError(f"{what} would listen on port {port}; pick another --port-offset")
        if port in seen:
            raise UsageError(f"{what} and {seen[port]} would both listen on port {port}")
        seen[port] = what
    return plan


# The flags of :func:`_parser` that take no value (``exec`` tells its command from them).
FLAGS_WITHOUT_VALUE = frozenset({"-h", "--help", "--log-json"})


def _parser(
    stack: Stack, stack_file: Path, environ: Mapping[str, str], *, for_exec: bool = False
) -> argparse.ArgumentParser:
    if for_exec:
        parser = argparse.ArgumentParser(
            prog="python -m deploy.local exec",
            usage="%(prog)s [flags] SERVICE [ARGS ...]",
            description="Run `python -m <SERVICE's module> ARGS` with the environment the "
            "launcher gives SERVICE (database, Redis, keys), whether or not the stack is "
            "running, e.g. `exec identity reset-password default`. Give the flags (or "
            "STACK_* variables) the stack runs with.",
            epilog=f"services: {', '.join(s.name for s in stack.services)}",
            allow_abbrev=False,  # an abbreviated flag would hide where the command starts
        )
    else:
        parser = argparse.ArgumentParser(
            prog="python -m deploy.local",
            description="Run the whole local stack (PostgreSQL, Valkey, services, workers, "
            "nginx gateway) in the foreground; Ctrl-C stops it. `python -m deploy.local exec "
            "--help`: run one command of a service with the stack's environment.",
        )
    parser.add_argument(
        "--stack",
        type=Path,
        default=stack_file,
        help="stack file [STACK_FILE] (default: %(default)s)",
    )
    parser.add_argument(
        "--data-dir",
        default=environ.get("STACK_DATA_DIR", str(DEFAULT_DATA_DIR)),
        help="databases, Valkey files, generated secrets [STACK_DATA_DIR] (default: %(default)s)",
    )
    parser.add_argument(
        "--database-url",
        default=environ.get("STACK_DATABASE_URL") or None,
        help="an existing PostgreSQL server (postgresql://user:password@host:port/db) for "
        "the services' databases, created there when missing, instead of the embedded one "
        "under the data dir; <SERVICE>_DATABASE_URL (e.g. TRACKING_DATABASE_URL) names one "
        "service's own database [STACK_DATABASE_URL]",
    )
    parser.add_argument(
        "--listen",
        default=environ.get("STACK_LISTEN", stack.listen),
        help="gateway bind address [STACK_LISTEN] (default: %(default)s)",
    )
    for entrypoint in stack.entrypoints:
        var = f"STACK_{_dest(entrypoint.name).upper()}"
        parser.add_argument(
            f"--{entrypoint.name}-port",
            dest=_dest(entrypoint.name),
            default=environ.get(var, str(entrypoint.port)),
            help=f"port of the {entrypoint.title} [{var}] (default: %(default)s)",
        )
    parser.add_argument(
        "--port-offset",
        default=environ.get("STACK_PORT_OFFSET", "0"),
        help="added to every internal port (services, Valkey, the embedded PostgreSQL) so a "
        "second stack can run beside the first [STACK_PORT_OFFSET] (default: %(default)s)",
    )
    parser.add_argument(
        "--replicas",
        action="append",
        metavar="NAME=N[,NAME=N ...]",
        help="run N processes of a service instead of stack.toml's count (1 to 9; "
        "repeatable), e.g. tracking=3,webhooks-worker=2; replica k of a web service listens "
        "on its port + 100 (k - 1) [STACK_REPLICAS]",
    )
    parser.add_argument(
        "--ready-timeout",
        default=environ.get("STACK_READY_TIMEOUT", "60"),
        help="seconds each process may take to become ready (default: %(default)s)",
    )
    parser.add_argument(
        "--log-json",
        action="store_true",
        default=environ.get("STACK_LOG_JSON", "").lower() in ("1", "true", "yes"),
        help="services log JSON lines instead of text [STACK_LOG_JSON]",
    )
    return parser


def _server_url(value: str | None) -> str | None:
    if value is None:
        return None
    if not value.startswith(("postgresql://", "postgresql+asyncpg://", "postgres://")):
        raise UsageError(
            f"--database-url must name a PostgreSQL server (postgresql://...): {value!r}"
        )
    return value


def _dest(entrypoint: str) -> str:
    return f"{entrypoint.replace('-', '_')}_port"


def _int(value: object, flag: str, *, low: int, high: int) -> int:
    try:
        number = int(str(value))
    except ValueError:
        raise UsageError(f"{flag} must be an integer, not {value!r}") from None
    if not low <= number <= high:
        raise UsageError(f"{flag} must be between {low} and {high}, not {number}")
    return number
