"""The embedded PostgreSQL (deploy.local.postgres) and the tests' server on it
(tests.support.postgres_server): started, answering, stopped without leaving anything."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from deploy.local import postgres
from tests.support.postgres_server import (
    PREFIX,
    SETTINGS,
    postgres_for_tests,
    remove_abandoned,
)
from tests.support.processes import REPO_ROOT, port_free
from tests.support.redis_server import free_port


async def fetch(url: str, query: str) -> Any:
    connection = await asyncpg.connect(url)
    try:
        return await connection.fetchval(query)
    finally:
        await connection.close()


def server_of(url: str) -> tuple[Path, int]:
    """The data directory of the server at ``url`` and its postmaster's pid."""
    data = Path(asyncio.run(fetch(url, "SHOW data_directory")))
    return data, int((data / "postmaster.pid").read_text().split()[0])


def test_without_test_database_url_the_tests_get_an_embedded_server_that_leaves_nothing(
    monkeypatch,
):
    monkeypatch.delenv("TEST_DATABASE_URL", raising=False)
    with postgres_for_tests() as url:
        assert url.startswith("postgresql://postgres@127.0.0.1:")
        assert asyncio.run(fetch(url, "SHOW server_version")).startswith("18.")
        for name, value in SETTINGS.items():
            assert asyncio.run(fetch(url, f"SHOW {name}")) == value
        data, pid = server_of(url)
        directory = data.parent
        assert directory.name.startswith(f"{PREFIX}{os.getpid()}-")
        port = int(url.rsplit(":", 1)[1].split("/")[0])
    assert not directory.exists()
    assert not Path(f"/proc/{pid}").exists()
    assert port_free(port)


def test_test_database_url_is_taken_as_it_is(monkeypatch):
    monkeypatch.setenv("TEST_DATABASE_URL", "postgresql://someone@db.example:5433/postgres")
    with postgres_for_tests() as url:
        assert url == "postgresql://someone@db.example:5433/postgres"


KEEP_A_SERVER = """
import time
from tests.support.postgres_server import postgres_for_tests
with postgres_for_tests() as url:
    print(url, flush=True)
    time.sleep(60)
"""


def test_a_killed_test_process_takes_its_server_along_and_the_next_run_removes_its_files(
    scratch,
):
    env = {k: v for k, v in os.environ.items() if k != "TEST_DATABASE_URL"}
    process = subprocess.Popen(
        [sys.executable, "-c", KEEP_A_SERVER],
        cwd=REPO_ROOT,
        env=env | {"TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    _, pid = server_of(url)
    (left,) = scratch.glob(f"{PREFIX}{process.pid}-*")
    process.kill()
    process.wait()
    process.stdout.close()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists():
        assert time.monotonic() < deadline, "the server outlived its test process"
        time.sleep(0.05)

    assert remove_abandoned(scratch) == [left]
    assert not left.exists()


@pytest.fixture
def pgdata(scratch: Path) -> Path:
    data = scratch / "data"
    assert postgres.initialize(data, sync=False)
    assert not postgres.initialize(data, sync=False)
    return data


def test_a_lock_file_left_by_a_killed_server_does_not_block_a_start(pgdata, tmp_path):
    # The dead server's pid now belongs to another process (here, this one).
    lock = pgdata / "postmaster.pid"
    lock.write_text(f"{os.getpid()}\n{pgdata}\n1700000000\n5432\n\n127.0.0.1\n  1  2\nready\n")
    assert postgres.leftover(pgdata) is None
    assert not lock.exists()
    port = free_port()
    with postgres.running(pgdata, port, SETTINGS, log=tmp_path / "log"):
        url = postgres.server_url(port, "app")
        assert asyncio.run(postgres.ensure_database(url))
        assert not asyncio.run(postgres.ensure_database(url))
        assert asyncio.run(fetch(url, "SELECT current_database()")) == "app"
    assert not lock.exists()


def test_a_server_a_killed_launcher_left_running_is_stopped(pgdata, tmp_path):
    account = postgres.server_account()
    with (tmp_path / "log").open("wb") as log:
        orphan = subprocess.Popen(
            postgres.command(pgdata, free_port()),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            **(account.process_options() if account is not None else {}),
        )
    deadline = time.monotonic() + 10
    while not postgres.ready(pgdata, orphan.pid):
        assert time.monotonic() < deadline, (tmp_path / "log").read_text()
        time.sleep(0.02)
    assert postgres.leftover(pgdata) == orphan.pid

    assert postgres.stop_leftover(pgdata) == orphan.pid
    assert orphan.wait(timeout=5) == 0  # a fast shutdown, not a kill
    assert postgres.leftover(pgdata) is None
    assert postgres.stop_leftover(pgdata) is None


def test_the_server_runs_as_its_own_user_when_started_by_root_and_stops_fast(pgdata, tmp_path):
    account = postgres.server_account()
    with postgres.running(pgdata, free_port(), SETTINGS, log=tmp_path / "log") as server:
        status = Path(f"/proc/{server.pid}/status").read_text()
        uid = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1]
        assert int(uid) == (account.uid if account is not None else os.getuid())
    assert server.returncode == 0
    assert "received fast shutdown request" in (tmp_path / "log").read_text()


def test_a_directory_that_only_its_owner_may_enter_blocks_other_users(scratch):
    locked = scratch / "locked"
    (locked / "inner").mkdir(parents=True)
    locked.chmod(0o700)
    try:
        assert postgres.blocking_directory(locked / "inner" / "data", None) == locked
        assert postgres.blocking_directory(locked / "inner" / "data", locked.stat().st_uid) is None
        locked.chmod(0o711)
        assert postgres.blocking_directory(locked / "inner" / "data", None) is None
        # Not made yet: whoever makes it chooses its mode.
        assert postgres.blocking_directory(scratch / "new" / "more" / "data", None) is None
    finally:
        locked.chmod(0o700)


def test_a_cluster_is_kept_outside_a_data_dir_postgresql_cannot_reach_only_as_root(scratch):
    locked = scratch / "locked"
    (locked / "clone" / ".local").mkdir(parents=True)
    locked.chmod(0o700)
    wanted = locked / "clone" / ".local" / "postgres"
    elsewhere = postgres.cluster_directory(wanted)
    if os.geteuid() != 0:  # the server runs as the caller, who reaches it
        assert elsewhere == wanted
        return
    assert elsewhere.parent == postgres.SHARED_ROOT / "clusters"
    assert elsewhere.name.startswith("local-")
    assert postgres.cluster_directory(wanted) == elsewhere  # the same one at every start
    assert postgres.cluster_directory(locked / "other" / ".local" / "postgres") != elsewhere
    locked.chmod(0o711)
    assert postgres.cluster_directory(wanted) == wanted
