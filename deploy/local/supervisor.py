"""Start, watch and stop the child processes of the local stack.

Each child runs in its own process group, so the terminal's Ctrl-C reaches only the
launcher (which then stops children in order) and a final ``SIGKILL`` to the group also
takes the child's own children (nginx workers, Valkey's rewrite fork). On Linux each child
also asks the kernel for ``SIGTERM`` when the launcher dies, so even ``kill -9`` of the
launcher leaves no orphans. Output is streamed line by line with the child's name in
front, and the last lines are kept to explain a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

TAIL_LINES = 40
_LINE_LIMIT = 1 << 20
_PR_SET_PDEATHSIG = 1
# A stage that runs out of the shared grace period still gets this long before SIGKILL,
# so Valkey, stopped last, can always fsync its append-only file.
_MIN_STAGE_GRACE = 2.0

_COLORS = (36, 33, 35, 32, 34, 91, 96, 93)


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    return prctl


# Loaded before any fork: the child side of fork must not load libraries.
_PRCTL = _load_prctl()


def die_with(parent_pid: int, sig: signal.Signals = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn`` that has the kernel send the child ``sig`` when ``parent_pid``
    (the process starting it) dies (Linux; elsewhere nothing)."""

    def setup() -> None:
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return setup


@dataclass(eq=False)
class Child:
    """One started process."""

    name: str
    process: asyncio.subprocess.Process
    stage: int
    stop_signal: signal.Signals
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    pump: asyncio.Task[None] | None = None
    watcher: asyncio.Task[int] | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the process itself (not its group); ignore if it is gone."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, sig)

    def kill_group(self) -> None:
        """``SIGKILL`` the child and everything left in its process group."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)


class Supervisor:
    """The children of one launcher run and the output they share."""

    def __init__(
        self,
        out: TextIO,
        *,
        color: bool,
        on_spawn: Callable[[Mapping[str, int]], None] | None = None,
    ) -> None:
        self.out = out
        self.color = color
        self.on_spawn = on_spawn
        self.children: list[Child] = []
        self.stopping = False
        self.failed = asyncio.Event()
        self.failure: str | None = None
        self.failed_child: Child | None = None
        self._width = 8

    def reserve(self, names: Sequence[str]) -> None:
        """Size the name column for every process that may print, so it never shifts."""
        self._width = max([self._width, *map(len, names)])

    def say(self, name: str, line: str) -> None:
        """Print one line with a name column (the launcher itself is ``stack``)."""
        self._width = max(self._width, len(name))
        label = name.ljust(self._width)
        if self.color:
            code = _COLORS[sum(map(ord, name)) % len(_COLORS)] if name != "stack" else 1
            label = f"\033[{code}m{label}\033[0m"
        try:
            self.out.write(f"{label} | {line}\n")
            self.out.flush()
        except (BrokenPipeError, ValueError):
            # Whoever read our output is gone (`make run | head`); keep supervising anyway.
            pass

    async def spawn(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        stage: int,
        stop_signal: signal.Signals = signal.SIGTERM,
        run_as: Mapping[str, Any] | None = None,
    ) -> Child:
        """Start ``argv`` in a new process group and begin streaming its output;
        ``run_as``: ``subprocess`` arguments that choose its user."""
        self._width = max(self._width, len(name))
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=dict(env),
            cwd=cwd,
            process_group=0,
            # SIGTERM rather than SIGKILL: every child shuts down cleanly on it (Valkey
            # fsyncs its AOF), and each of them does exit on it.
            preexec_fn=die_with(os.getpid()),
            limit=_LINE_LIMIT,
            **(run_as or {}),
        )
        child = Child(name=name, process=process, stage=stage, stop_signal=stop_signal)
        self.children.append(child)
        if self.on_spawn is not None:
            self.on_spawn({c.name: c.pid for c in self.children})
        child.pump = asyncio.create_task(self._pump(child))
        child.watcher = asyncio.create_task(self._watch(child))
        return child

    async def _pump(self, child: Child) -> None:
        stream = child.process.stdout
        if stream is None:
            return
        while True:
            try:
                raw = await stream.readline()
            except ValueError:  # a line longer than the limit: take what is there
                raw = await stream.read(_LINE_LIMIT)
            if not raw:
                return
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            child.tail.append(line)
            self.say(child.name, line)

    async def _watch(self, child: Child) -> int:
        code = await child.process.wait()
        if child.pump is not None:
            # Orphaned grandchildren may hold the pipe open; do not wait for them forever.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(child.pump), 1.0)
        if not self.stopping and self.failure is None:
            self.failure = f"{child.name} exited unexpectedly with {describe_exit(code)}"
            self.failed_child = child
            self.failed.set()
        return code

    def kill_now(self) -> None:
        """``SIGKILL`` every process group at once (a second Ctrl-C)."""
        for child in self.children:
            child.kill_group()

    async def stop_all(self, grace: float) -> None:
        """Stop children stage by stage (lowest first), then sweep their groups.

        Each stage gets its stop signal; whatever still runs when the shared ``grace``
        period (at least ``_MIN_STAGE_GRACE`` per stage) ends is killed with its group.
        """
        self.stopping = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        for stage in sorted({child.stage for child in self.children}):
            group = [c for c in self.children if c.stage == stage and c.returncode is None]
            for child in group:
                child.signal(child.stop_signal)
            waiters = [c.watcher for c in group if c.watcher is not None]
            if waiters:
                timeout = max(deadline - loop.time(), _MIN_STAGE_GRACE)
                await asyncio.wait(waiters, timeout=timeout)
            for child in group:
                if child.returncode is None:
                    self.say("stack", f"{child.name} did not stop in time; killing it")
                    child.kill_group()
        for child in self.children:
            if child.watcher is not None:
                await child.watcher
            # Anything the child left behind in its group (normally nothing).
            child.kill_group()
        pumps = [c.pump for c in self.children if c.pump is not None]
        if pumps:
            await asyncio.wait(pumps, timeout=1.0)
            for pump in pumps:
                pump.cancel()


def describe_exit(code: int) -> str:
    """``code 3`` or ``signal SIGKILL`` (asyncio reports signals as negative codes)."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-code).name}"
    return f"code {code}"
