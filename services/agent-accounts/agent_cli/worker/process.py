"""One task's command as a subprocess: its environment, its time limit, and its end.

The process runs under ``/bin/sh -c`` in a session of its own, so that a timeout, a
cancellation or the end of the command stops everything it started. Its environment is
the worker's, less every contract variable (``SERVICE_API_URL``, ``SERVICE_API_KEY``,
``SERVICE_API_TOKEN``, ``SERVICE_TASK_*``, in any case), plus the task's own variables,
plus the contract set for this task: the server URL, the task token as
``SERVICE_API_TOKEN``, ``SERVICE_TASK_ID`` and ``SERVICE_TASK_RESULT_PATH``. The worker's
API key is never passed on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONTRACT_NAMES = frozenset({"SERVICE_API_URL", "SERVICE_API_KEY", "SERVICE_API_TOKEN"})
CONTRACT_PREFIX = "SERVICE_TASK_"
TAIL_BYTES = 64 * 1024
MAX_VALUE_BYTES = 512 * 1024
KILL_GRACE_SECONDS = 5.0
_EXIT_POLL_SECONDS = 0.05


def is_contract(name: str) -> bool:
    upper = name.upper()
    return upper in CONTRACT_NAMES or upper.startswith(CONTRACT_PREFIX)


def task_environment(
    inherited: Mapping[str, str],
    extra: Mapping[str, str],
    *,
    url: str,
    token: str,
    task_id: str,
    result_path: Path,
) -> dict[str, str]:
    env = {k: v for k, v in inherited.items() if not is_contract(k)}
    env.update({k: v for k, v in extra.items() if not is_contract(k)})
    env.update(
        SERVICE_API_URL=url,
        SERVICE_API_TOKEN=token,
        SERVICE_TASK_ID=task_id,
        SERVICE_TASK_RESULT_PATH=str(result_path),
    )
    return env


class Tail:
    """The last bytes written to a stream."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.limit = limit
        self.data = bytearray()

    def write(self, chunk: bytes) -> None:
        self.data.extend(chunk)
        if len(self.data) > self.limit:
            del self.data[: len(self.data) - self.limit]

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


@dataclass
class Outcome:
    exit_code: int | None
    """``None`` when the process was stopped (time limit or cancellation)."""
    timed_out: bool
    stdout: str
    stderr: str


async def run_command(
    command: str,
    *,
    cwd: str | None,
    env: Mapping[str, str],
    time_limit: float,
    stop: asyncio.Event,
) -> Outcome:
    """Run to exit, for at most ``time_limit`` seconds or until ``stop`` is set; raises
    ``OSError`` when the command cannot start (a missing working directory, say)."""
    process = await asyncio.create_subprocess_shell(
        command,
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    out, err = Tail(), Tail()
    readers = [
        asyncio.create_task(_read(process.stdout, out)),
        asyncio.create_task(_read(process.stderr, err)),
    ]
    exited = asyncio.create_task(_exit_code(process))
    stopped = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait(
            {exited, stopped}, timeout=time_limit, return_when=asyncio.FIRST_COMPLETED
        )
        # Decided before the group is stopped: a process killed below is not an exit.
        code = exited.result() if exited.done() else None
    finally:
        await _stop_group(process, exited)
        stopped.cancel()
        # Something the command started may hold the pipes open; it was killed above.
        _, pending = await asyncio.wait(readers, timeout=1.0)
        for reader in pending:
            reader.cancel()
    return Outcome(
        exit_code=code,
        timed_out=code is None and not stop.is_set(),
        stdout=out.text(),
        stderr=err.text(),
    )


async def _read(stream: asyncio.StreamReader | None, tail: Tail) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        tail.write(chunk)


async def _exit_code(process: asyncio.subprocess.Process) -> int:
    # Process.wait() also waits for the pipes to close, which a leftover child of the
    # command can delay forever: poll the exit status instead.
    while process.returncode is None:  # noqa: ASYNC110 (no event tells the exit alone)
        await asyncio.sleep(_EXIT_POLL_SECONDS)
    return process.returncode


def _signal_group(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


async def _stop_group(process: asyncio.subprocess.Process, exited: asyncio.Task[int]) -> None:
    """SIGTERM the command's process group, SIGKILL after a grace period; after a normal
    exit, SIGKILL whatever the command left behind."""
    if not exited.done():
        _signal_group(process.pid, signal.SIGTERM)
        _, pending = await asyncio.wait({exited}, timeout=KILL_GRACE_SECONDS)
        if pending:
            _signal_group(process.pid, signal.SIGKILL)
            await asyncio.wait({exited}, timeout=KILL_GRACE_SECONDS)
    _signal_group(process.pid, signal.SIGKILL)
    exited.cancel()


def read_value(path: Path) -> tuple[Any, str | None]:
    """The JSON value the command wrote to ``SERVICE_TASK_RESULT_PATH`` (``None`` if it
    wrote nothing), or an error saying why it cannot be used."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None, None
    if size > MAX_VALUE_BYTES:
        return None, f"the command wrote a result larger than {MAX_VALUE_BYTES} bytes"
    try:
        return json.loads(path.read_bytes()), None
    except (OSError, ValueError, RecursionError):
        return None, "the command wrote a result that is not valid JSON"
