"""A fresh clone in a directory only its owner can enter (``mktemp -d``; ``/root``), set up
and run with the README's commands: ``make sync``, then ``make run`` with the embedded
PostgreSQL and the default data dir (``<clone>/.local``), and the tests' own embedded
server, as ``make test`` starts it.

Run as root (as CI runs the suite), PostgreSQL runs as a user of its own who can reach
neither the clone's ``.venv`` (the binaries) nor its ``.local`` (the data): the server
must start anyway, without a directory above the clone being opened up. The clone is a
copy of this work tree (tracked and untracked files, not ``.venv`` or anything ignored),
so the code under test is the code checked out here.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from deploy.local import postgres
from tests.support.processes import (
    PASSWORDS,
    LaunchedStack,
    StackStartError,
    live_processes,
    pick_stack_ports,
    remove_relocated_cluster,
    wait_for_platform,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
ADMIN_PASSWORD = "Root-only-clone-1"
SYNC_TIMEOUT = 90.0
START_TIMEOUT = 90.0
STOP_TIMEOUT = 30.0

# The module's first test also waits for its fixtures: `make sync` and `make run`.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(SYNC_TIMEOUT + START_TIMEOUT + 30)]


def copy_work_tree(target: Path) -> None:
    """The files of this work tree git would commit (tracked, or untracked and not
    ignored), as they are now."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    )
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = REPO_ROOT / name
        if not source.exists():  # deleted in the work tree, not yet in git
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name, follow_symlinks=False)


def user_environment() -> dict[str, str]:
    """This environment as a user's shell would have it: no stack settings, databases or
    passwords of the caller's, no outer make's job server or virtual environment, and a
    ``uv`` on ``PATH`` (working offline: the packages are in uv's cache, the one this work
    tree's sync used, since that sync)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("STACK_", "MAKE", "MFLAGS", "VIRTUAL_ENV"))
        and not k.endswith("_DATABASE_URL")
        and k not in PASSWORDS
        and k != "TEST_DATABASE_URL"
    }
    uv = shutil.which("uv") or str(REPO_ROOT / ".tools" / "bin" / "uv")
    env["PATH"] = f"{Path(uv).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    env["UV_OFFLINE"] = "1"
    return env


def make(clone: Path, *args: str) -> list[str]:
    # The interpreter this suite runs on, which uv's cache has the packages for.
    return [
        "make",
        "--no-print-directory",
        "-C",
        str(clone),
        f"PYTHON={getattr(sys, '_base_executable', sys.executable)}",
        *args,
    ]


@pytest.fixture(scope="module")
def clone() -> Iterator[Path]:
    parent = Path(tempfile.mkdtemp(prefix="root-only-clone-"))
    assert parent.stat().st_mode & 0o777 == 0o700
    target = parent / "platform"
    try:
        copy_work_tree(target)
        synced = subprocess.run(
            make(target, "sync"),
            env=user_environment(),
            capture_output=True,
            text=True,
            timeout=SYNC_TIMEOUT,
        )
        assert synced.returncode == 0, synced.stdout + synced.stderr
        yield target
    finally:
        shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(clone: Path) -> Iterator[LaunchedStack]:
    offset, ports = pick_stack_ports()
    args = ["--port-offset", str(offset)]
    args += [arg for name, port in ports.items() for arg in (f"--{name}-port", str(port))]
    log = clone.parent / "make-run.log"
    env = user_environment() | {"DEFAULT_ADMIN_PASSWORD": ADMIN_PASSWORD}
    with log.open("wb") as output:
        process = subprocess.Popen(
            make(clone, "run", f"RUN_ARGS={' '.join(args)}"),
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # make, uv and the launcher: one group to signal
        )
    data_dir = clone / ".local"
    running = LaunchedStack(process, data_dir, log, ports, children={})
    try:
        try:
            wait_for_platform(running, START_TIMEOUT)
        except StackStartError as exc:
            pytest.fail(f"make run did not start the stack: {exc}", pytrace=False)
        pids = json.loads((data_dir / "run" / "processes.json").read_text())
        running.children = dict(pids["children"])
        yield running
    finally:
        _stop(running)
        remove_relocated_cluster(data_dir)


def _stop(running: LaunchedStack) -> None:
    """Ctrl-C as a terminal sends it (to make, uv and the launcher), then wait for every
    process the launcher started to be gone."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(running.process.pid, signal.SIGINT)
    try:
        running.process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(running.process.pid, signal.SIGKILL)
        running.process.wait()
    deadline = time.monotonic() + STOP_TIMEOUT
    groups = set(running.children.values())
    while (left := live_processes(groups, str(running.data_dir))) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    assert not left, f"still running {STOP_TIMEOUT:g}s after Ctrl-C: {left}"


def test_make_run_serves_the_platform_and_a_login_works(stack: LaunchedStack):
    with httpx.Client(timeout=10.0, trust_env=False) as client:
        health = client.get(stack.url("platform", "/health"))
        login = client.post(
            stack.url("platform", "/api/v1/login"),
            data={"username": "default", "password": ADMIN_PASSWORD},
        )
        headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
        me = client.get(stack.url("platform", "/api/v1/current-user"), headers=headers)
    assert health.status_code == 200, health.text
    assert login.status_code == 200, login.text
    assert me.status_code == 200, me.text
    assert me.json()["name"] == "default"


def test_postgresql_runs_from_where_its_user_can_reach_and_no_directory_was_opened_up(
    stack: LaunchedStack, clone: Path
):
    command = Path(f"/proc/{stack.children['postgres']}/cmdline").read_bytes().split(b"\0")
    binary, pgdata = Path(command[0].decode()), Path(command[command.index(b"-D") + 1].decode())
    assert clone.parent.stat().st_mode & 0o777 == 0o700
    if os.geteuid() != 0:  # PostgreSQL runs as the caller, who reaches the clone
        assert binary.is_relative_to(clone)
        assert pgdata == stack.data_dir / "postgres"
        return
    assert binary.is_relative_to(postgres.SHARED_ROOT), binary
    assert pgdata == postgres.cluster_directory(stack.data_dir / "postgres")
    assert pgdata.is_relative_to(postgres.SHARED_ROOT), pgdata
    assert (
        f"PostgreSQL's cluster is kept in {pgdata}: its user ({postgres.SERVER_USER}; "
        f"PostgreSQL does not run as root) cannot get through {clone.parent} to the data dir"
    ) in stack.output()
    assert f"(data in {pgdata})" in stack.output()


def test_the_tests_embedded_server_starts_from_the_clone(clone: Path):
    """What ``make test`` does first without TEST_DATABASE_URL, with the clone's code."""
    script = (
        "import asyncio, asyncpg\n"
        "from tests.support.postgres_server import postgres_for_tests\n"
        "async def ask(url):\n"
        "    connection = await asyncpg.connect(url)\n"
        "    try:\n"
        "        return await connection.fetchval('SELECT 41 + 1')\n"
        "    finally:\n"
        "        await connection.close()\n"
        "with postgres_for_tests() as url:\n"
        "    print('answer', asyncio.run(ask(url)))\n"
    )
    ran = subprocess.run(
        [str(clone / ".venv" / "bin" / "python"), "-c", script],
        cwd=clone,
        env=user_environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.strip() == "answer 42"
