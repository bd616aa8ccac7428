"""Start, watch and stop the child processes of the local stack.

Each child runs in its own process group, so the terminal's Ctrl-C reaches only the
launcher (which then stops children in order) and a final ``SIGKILL`` to the group also
takes the child's own children (nginx workers, Valkey's rewrite fork). On Linux each child
also asks the kernel for ``SIGTERM`` when the launcher dies, so even ``kill -9`` of the
launcher leaves no orphans. Output is streamed line by line with the child's name in
front, and the last lines are kept to explain a failure.

Once the stack is up (:attr:`Supervisor.restarts`), a child that dies is started again
with the same command, environment and working directory (so on the same port), after a
backoff that doubles with each failed start: a start fails when the process exits before
it is ready or within :data:`START_WINDOW` of its start. After
:data:`MAX_START_FAILURES` failed starts in a row the supervisor gives up and reports a
failure, which stops the stack. Before that, during the stack's own start, any death is a
failure at once: nothing has worked yet, and the log shows why.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

TAIL_LINES = 40
_LINE_LIMIT = 1 << 20
_PR_SET_PDEATHSIG = 1
# A stage that runs out of the shared grace period still gets this long before SIGKILL,
# so Valkey, stopped last, can always fsync its append-only file.
_MIN_STAGE_GRACE = 2.0
_EXIT_POLL = 0.2

_COLORS = (36, 33, 35, 32, 34, 91, 96, 93)

START_WINDOW = 10.0
"""A process that exits sooner than this after its start (or before it is ready) failed
at start."""
MAX_START_FAILURES = 5
"""Failed starts in a row after which a process is given up (and the stack stopped)."""
FIRST_BACKOFF = 0.25
MAX_BACKOFF = 30.0
"""The delay before a restart: ``FIRST_BACKOFF`` doubled for each failed start in a row,
at most ``MAX_BACKOFF``."""


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


@dataclass(frozen=True)
class Recipe:
    """How a process is started, kept to start it again the same way."""

    argv: Sequence[str]
    env: Mapping[str, str]
    cwd: Path
    stage: int
    stop_signal: signal.Signals
    run_as: Mapping[str, Any] | None = None
    ready: Callable[[Child], Awaitable[None]] | None = None
    """Returns once the process is ready; raises if it exits or is not ready in time
    (``None``: ready once started)."""
    before_restart: Callable[[], object] | None = None
    """Run (in a thread) before a restart: clears what a killed process left behind."""


@dataclass(eq=False)
class Child:
    """One started process."""

    name: str
    process: asyncio.subprocess.Process
    recipe: Recipe
    started_at: float
    failed_starts: int = 0
    """Failed starts in a row before this one."""
    ready_at: float | None = None
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    pump: asyncio.Task[None] | None = None
    watcher: asyncio.Task[int] | None = None

    @property
    def stage(self) -> int:
        return self.recipe.stage

    @property
    def stop_signal(self) -> signal.Signals:
        return self.recipe.stop_signal

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
        self.restarts = False
        """Whether a child that dies is started again (else its death is a failure)."""
        self._stop_restarting = asyncio.Event()
        self._restarting: set[asyncio.Task[None]] = set()
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
        ready: Callable[[Child], Awaitable[None]] | None = None,
        before_restart: Callable[[], object] | None = None,
    ) -> Child:
        """Start ``argv`` in a new process group and begin streaming its output;
        ``run_as``: ``subprocess`` arguments that choose its user; ``ready`` and
        ``before_restart``: see :class:`Recipe`. The caller waits with :meth:`until_ready`."""
        recipe = Recipe(argv, env, cwd, stage, stop_signal, run_as, ready, before_restart)
        return await self._start(name, recipe, failed_starts=0)

    async def _start(self, name: str, recipe: Recipe, *, failed_starts: int) -> Child:
        self._width = max(self._width, len(name))
        process = await asyncio.create_subprocess_exec(
            *recipe.argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=dict(recipe.env),
            cwd=recipe.cwd,
            process_group=0,
            # SIGTERM rather than SIGKILL: every child shuts down cleanly on it (Valkey
            # fsyncs its AOF), and each of them does exit on it.
            preexec_fn=die_with(os.getpid()),
            limit=_LINE_LIMIT,
            **(recipe.run_as or {}),
        )
        child = Child(
            name=name,
            process=process,
            recipe=recipe,
            started_at=asyncio.get_running_loop().time(),
            failed_starts=failed_starts,
        )
        # A restarted process takes its predecessor's place: processes.json names the
        # living one.
        self.children = [c for c in self.children if c.name != name] + [child]
        if self.on_spawn is not None:
            self.on_spawn({c.name: c.pid for c in self.children})
        child.pump = asyncio.create_task(self._pump(child))
        child.watcher = asyncio.create_task(self._watch(child))
        return child

    async def until_ready(self, child: Child) -> None:
        """Wait for the child's ``ready`` check (raising as it raises) and note the time."""
        if child.recipe.ready is not None:
            await child.recipe.ready(child)
        child.ready_at = asyncio.get_running_loop().time()

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

    async def _exited(self, child: Child) -> int:
        """The child's exit status as soon as it has exited. asyncio's ``wait()`` also
        waits for the output pipe to close, which a killed nginx's workers (or any
        grandchild) keep open; its exit status is known before that."""
        waiting = asyncio.ensure_future(child.process.wait())
        try:
            while (code := child.process.returncode) is None:
                await asyncio.wait([waiting], timeout=_EXIT_POLL)
        finally:
            waiting.cancel()
        return code

    async def _watch(self, child: Child) -> int:
        code = await self._exited(child)
        if self.restarts and not self.stopping:
            # Whatever the dead process left in its group (nginx workers holding the port
            # and its output pipe, PostgreSQL backends holding shared memory) would stop
            # the new one from starting.
            child.kill_group()
        if child.pump is not None:
            # Orphaned grandchildren may hold the pipe open; do not wait for them forever.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(child.pump), 1.0)
        if self.stopping or self.failure is not None:
            return code
        if not self.restarts:
            self._fail(child, f"{child.name} exited unexpectedly with {describe_exit(code)}")
            return code
        loop = asyncio.get_running_loop()
        lived = loop.time() - child.started_at
        failed_start = child.ready_at is None or lived < START_WINDOW
        failed_starts = child.failed_starts + 1 if failed_start else 0
        if failed_starts >= MAX_START_FAILURES:
            self._fail(
                child,
                f"{child.name} failed at start {failed_starts} times in a row (the last "
                f"time it exited with {describe_exit(code)} after {lived:.1f}s); giving up",
            )
            return code
        delay = min(MAX_BACKOFF, FIRST_BACKOFF * 2 ** max(failed_starts - 1, 0))
        how = (
            f"{lived:.1f}s after its start (failed start {failed_starts} of "
            f"{MAX_START_FAILURES} in a row)"
            if failed_start
            else f"after {lived:.0f}s"
        )
        self.say(
            "stack",
            f"{child.name} exited with {describe_exit(code)} {how}; restarting it in {delay:g}s",
        )
        task = asyncio.create_task(self._restart(child, delay, failed_starts))
        self._restarting.add(task)
        task.add_done_callback(self._restarting.discard)
        return code

    def _fail(self, child: Child, failure: str) -> None:
        self.failure = failure
        self.failed_child = child
        self.failed.set()

    async def _restart(self, dead: Child, delay: float, failed_starts: int) -> None:
        """Start ``dead``'s recipe again after ``delay``, unless the stack stops first."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop_restarting.wait(), delay)
        if self.stopping:
            return
        recipe = dead.recipe
        try:
            if recipe.before_restart is not None:
                await asyncio.to_thread(recipe.before_restart)
            child = await self._start(dead.name, recipe, failed_starts=failed_starts)
        except Exception as exc:  # e.g. a binary that cannot be executed any more
            self._fail(dead, f"{dead.name} could not be restarted: {exc}")
            return
        self.say("stack", f"restarted {child.name} (pid {child.pid})")
        ready = asyncio.ensure_future(self.until_ready(child))
        stopping = asyncio.ensure_future(self._stop_restarting.wait())
        try:
            await asyncio.wait([ready, stopping], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if not ready.done():
            ready.cancel()
            return
        problem = ready.exception()
        if problem is None:
            self.say("stack", f"{child.name} is running again")
        elif child.returncode is None:
            # Alive but not ready in time: its death counts as a failed start.
            self.say("stack", f"{problem}; killing it")
            child.kill_group()

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
        self._stop_restarting.set()
        # A restart under way ends at once (before or after its spawn), so that the list
        # of children below is complete.
        if self._restarting:
            await asyncio.wait(list(self._restarting))
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
