"""The launcher's data directory: layout, single-launcher lock, process list.

Layout (default ``<repo>/.local``, git-ignored)::

    secrets.json          generated once, mode 0600 (see deploy.local.secrets)
    postgres/             the embedded PostgreSQL's cluster (deploy.local.postgres): one
                          database per web service; run as root, it is owned by the
                          server's own user, and the data dir lets others through (o+x);
                          when a directory above the data dir does not, the cluster is
                          kept in /var/lib/platform-embedded-postgres/clusters instead
                          (postgres/ then stays empty)
    valkey/               Valkey's append-only files
    gateway/              nginx prefix: rendered nginx.conf, pid, temp files, access.log
    run/processes.json    pids of the running launcher and its children
    launcher.lock         held while a launcher uses this directory
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

SUBDIRS = ("postgres", "valkey", "gateway", "run")


class SetupError(Exception):
    """The launcher cannot start at all (reported as one line, exit code 2)."""


def prepare(data_dir: Path) -> None:
    """Create the data directory and its parts (owner-only for new directories)."""
    try:
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        for name in SUBDIRS:
            (data_dir / name).mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise SetupError(f"cannot create the data dir {data_dir}: {exc.strerror}") from None


@contextlib.contextmanager
def exclusive(data_dir: Path) -> Iterator[None]:
    """Hold ``launcher.lock`` so that two launchers never share one data dir."""
    path = data_dir / "launcher.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SetupError(
                f"another launcher is already running with the data dir {data_dir}"
            ) from None
        yield
    finally:
        os.close(fd)  # closing releases the lock


def pid_file(data_dir: Path) -> Path:
    """Where the running launcher lists its own pid and its children's."""
    return data_dir / "run" / "processes.json"


def write_pids(data_dir: Path, children: Mapping[str, int]) -> None:
    """Record the launcher's pid and each child's (each child leads its own group)."""
    path = pid_file(data_dir)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"launcher": os.getpid(), "children": dict(children)}, indent=2))
    os.replace(tmp, path)


def remove_pids(data_dir: Path) -> None:
    """Forget the process list once every child is gone."""
    pid_file(data_dir).unlink(missing_ok=True)
