"""The worker: register with the API key, then claim tasks and run their commands.

It holds a worker token (renewed before expiry and on a 401, see :mod:`.auth`), claims
up to ``concurrency`` tasks at a time, heartbeats the tasks it holds (the server may ask
to cancel some), runs each task's command with the task token (:mod:`.process`) and
reports the task's status, error and result with that token. When ``stop`` is set
(SIGTERM) it claims no more and drains: running tasks finish, unless ``force`` is set
(a second signal) or the drain timeout passes, which stops them and fails them.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import platform
import re
import socket
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_cli.client import ApiClient, ApiError
from agent_cli.output import CliError, ExitCode, Output
from agent_cli.worker.auth import WorkerToken
from agent_cli.worker.process import Outcome, read_value, run_command, task_environment

MAX_CLAIM = 100
CLAIM_BACKOFF_MAX = 60.0
REPORT_ATTEMPTS = 3


def default_name() -> str:
    raw = f"{socket.gethostname()}-{os.getpid()}"
    return re.sub(r"[^A-Za-z0-9_-]", "-", raw).strip("-_")[:255] or "worker"


def runtime() -> dict[str, str]:
    return {
        "platform": "bare",
        "hostname": socket.gethostname()[:255],
        "os": platform.system(),
        "arch": platform.machine(),
        "python_version": platform.python_version(),
    }


@dataclass
class WorkerOptions:
    name: str
    kinds: list[str]
    concurrency: int = 4
    poll_interval: float = 2.0
    heartbeat_interval: float = 10.0
    drain_timeout: float | None = None
    lifetime: float | None = None


@dataclass
class _Stop:
    """Stops one task's command, and says why (``canceled`` by the server, or
    ``stopped`` with the worker)."""

    event: asyncio.Event = field(default_factory=asyncio.Event)
    reason: str = ""

    def __call__(self, reason: str) -> None:
        if not self.event.is_set():
            self.reason = reason
            self.event.set()


@dataclass
class _Running:
    task: asyncio.Task[None]
    stop: _Stop


class Worker:
    def __init__(
        self,
        url: str,
        api_key: str,
        options: WorkerOptions,
        output: Output,
        inherited_env: Mapping[str, str],
    ) -> None:
        self.url = url
        self.api_key = api_key
        self.options = options
        self.output = output
        self.inherited_env = inherited_env
        self.running: dict[str, _Running] = {}
        self.finished = 0

    async def run(self, stop: asyncio.Event, force: asyncio.Event) -> int:
        """Work until ``stop``; the number of tasks run."""
        async with ApiClient(self.url, credential=self.api_key) as account:
            registered = await account.register_worker(
                {
                    "name": self.options.name,
                    "scope": {"claims": [{"kind": kind} for kind in self.options.kinds]},
                    "runtime": runtime(),
                }
            )
            worker_id = str(registered["worker"]["id"])
            self.output.event(
                "registered",
                f"Registered worker {self.options.name} ({worker_id}) with {self.url}; "
                f"claiming {', '.join(self.options.kinds)} tasks.",
                worker_id=worker_id,
                name=self.options.name,
                server=self.url,
            )
            token = WorkerToken(
                account,
                worker_id,
                registered["token"],
                registered["token_expires_at"],
                on_renew=self._renewed,
            )
            async with ApiClient(self.url, auth=token) as as_worker:
                background = [
                    asyncio.create_task(token.keep_fresh()),
                    asyncio.create_task(self._heartbeats(as_worker, worker_id)),
                ]
                try:
                    with self.output.waiting("Waiting for tasks (Ctrl-C to stop)..."):
                        try:
                            await self._claim_loop(as_worker, stop)
                        finally:
                            # Also when claiming failed for good (the key was revoked):
                            # the tasks already held still finish and report.
                            await self._drain(force)
                finally:
                    for job in background:
                        job.cancel()
                    await asyncio.gather(*background, return_exceptions=True)
        self.output.event(
            "stopped", f"Worker stopped after {self.finished} task(s).", tasks=self.finished
        )
        return self.finished

    def _renewed(self, reason: str, expires_at: dt.datetime) -> None:
        why = "after a 401" if reason == "401" else "before expiry"
        self.output.event(
            "token_renewed",
            f"Worker token renewed {why}.",
            reason=reason,
            expires_at=expires_at.isoformat(),
        )

    async def _claim_loop(self, as_worker: ApiClient, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.options.lifetime if self.options.lifetime else None
        backoff = self.options.poll_interval
        while not stop.is_set():
            if deadline is not None and loop.time() >= deadline:
                self.output.event("lifetime", "The worker's --timeout is reached.")
                return
            free = self.options.concurrency - len(self.running)
            if free <= 0:
                await _first_of([r.task for r in self.running.values()], stop, None)
                continue
            requested = min(free, MAX_CLAIM)
            try:
                claimed = await as_worker.claim(requested)
            except CliError as exc:
                if isinstance(exc, ApiError) and exc.code == ExitCode.AUTH:
                    raise  # the key itself was refused: nothing to wait for
                self.output.event("claim_failed", f"Claim failed: {exc.message}", error=exc.message)
                await _first_of([], stop, backoff)
                backoff = min(backoff * 2, CLAIM_BACKOFF_MAX)
                continue
            backoff = self.options.poll_interval
            for item in claimed:
                self._start(as_worker, item)
            if len(claimed) < requested:
                await _first_of([], stop, self.options.poll_interval)

    def _start(self, as_worker: ApiClient, item: dict[str, Any]) -> None:
        task_id = str(item["task"]["id"])
        self.output.event(
            "claimed",
            f"Task {task_id} claimed (attempt {item['task']['attempt']}).",
            task_id=task_id,
            attempt=item["task"]["attempt"],
        )
        stop = _Stop()
        task = asyncio.create_task(self._execute(as_worker, item, stop))
        self.running[task_id] = _Running(task, stop)
        task.add_done_callback(lambda _: self._done(task_id))

    def _done(self, task_id: str) -> None:
        self.running.pop(task_id, None)
        self.finished += 1

    async def _heartbeats(self, as_worker: ApiClient, worker_id: str) -> None:
        """Every interval, the tasks held (also when none: it keeps the worker live)."""
        while True:
            await asyncio.sleep(self.options.heartbeat_interval)
            try:
                cancel = await as_worker.heartbeat(worker_id, sorted(self.running))
            except CliError as exc:
                self.output.event("heartbeat_failed", f"Heartbeat failed: {exc.message}",
                                  error=exc.message)  # fmt: skip
                continue
            for task_id in cancel:
                if (running := self.running.get(str(task_id))) is not None:
                    running.stop("canceled")

    async def _drain(self, force: asyncio.Event) -> None:
        if not self.running:
            return
        self.output.event(
            "draining",
            f"Stopping: waiting for {len(self.running)} running task(s).",
            running=sorted(self.running),
        )
        tasks = [r.task for r in self.running.values()]
        await _first_of(tasks, force, self.options.drain_timeout, every=True)
        for running in list(self.running.values()):
            running.stop("stopped")
        await asyncio.gather(*tasks, return_exceptions=True)

    # One task

    async def _execute(self, as_worker: ApiClient, item: dict[str, Any], stop: _Stop) -> None:
        task_id, token, spec = str(item["task"]["id"]), item["token"], item["spec"]
        if not await self._report(as_worker, task_id, token, {"status": "running"}):
            return
        run = spec.get("run")
        if not run:
            refusal = "this worker runs only tasks that carry a command"
            await self._finish(as_worker, task_id, token, "failed", error=refusal)
            return
        with tempfile.TemporaryDirectory(prefix="agent-run-task-") as work:
            result_path = Path(work) / "result.json"
            env = task_environment(
                self.inherited_env, run.get("env") or {}, url=self.url, token=token,
                task_id=task_id, result_path=result_path,
            )  # fmt: skip
            try:
                outcome = await run_command(
                    run["command"],
                    cwd=run.get("working_dir"),
                    env=env,
                    time_limit=float(spec["timeout_seconds"]),
                    stop=stop.event,
                )
            except OSError as exc:
                await self._finish(as_worker, task_id, token, "failed",
                                   error=f"the command could not start: {exc}")  # fmt: skip
                return
            value, value_error = read_value(result_path)
        status, error = _verdict(outcome, value_error, stop.reason, spec["timeout_seconds"])
        result = {
            "exit_code": outcome.exit_code,
            "stdout": outcome.stdout,
            "stderr": outcome.stderr,
            "value": value,
        }
        await self._finish(as_worker, task_id, token, status, error=error, result=result)

    async def _finish(
        self,
        as_worker: ApiClient,
        task_id: str,
        token: str,
        status: str,
        *,
        error: str | None = None,
        result: Any = None,
    ) -> None:
        body = {"status": status, "error": error, "result": result}
        if await self._report(as_worker, task_id, token, body):
            self.output.event(
                "finished",
                f"Task {task_id} {status}" + (f": {error}" if error else "."),
                task_id=task_id,
                status=status,
                error=error,
                exit_code=result.get("exit_code") if isinstance(result, dict) else None,
            )

    async def _report(
        self, as_worker: ApiClient, task_id: str, token: str, body: dict[str, Any]
    ) -> bool:
        """Report with the task token; ``False`` when the attempt is no longer ours (the
        task was requeued, or already settled) or the server cannot be reached."""
        for attempt in range(REPORT_ATTEMPTS):
            try:
                await as_worker.report_task(task_id, token, body)
                return True
            except ApiError as exc:
                if attempt > 0 and exc.status == 409:
                    return True  # an earlier attempt got through before the line broke
                self.output.event("dropped", f"Task {task_id} dropped: {exc.message}",
                                  task_id=task_id, error=exc.message)  # fmt: skip
                return False
            except CliError as exc:
                if attempt == REPORT_ATTEMPTS - 1:
                    self.output.event("dropped", f"Task {task_id} not reported: {exc.message}",
                                      task_id=task_id, error=exc.message)  # fmt: skip
                    return False
                await asyncio.sleep(2**attempt)
        return False


def _verdict(
    outcome: Outcome, value_error: str | None, reason: str, timeout: int
) -> tuple[str, str | None]:
    if outcome.exit_code is None:
        if reason == "canceled":
            return "canceled", "the server canceled the task"
        if reason == "stopped":
            return "failed", "the worker stopped before the command finished"
        return "timed_out", f"the command ran longer than {timeout} seconds"
    if outcome.exit_code != 0:
        return "failed", f"the command exited with code {outcome.exit_code}"
    if value_error is not None:
        return "failed", value_error
    return "completed", None


async def _first_of(
    tasks: list[asyncio.Task[None]],
    event: asyncio.Event,
    seconds: float | None,
    *,
    every: bool = False,
) -> None:
    """Wait until one of ``tasks`` (all of them, with ``every``) ends, ``event`` is set
    or ``seconds`` pass."""
    waiter = asyncio.create_task(event.wait())
    try:
        pending: set[asyncio.Future[Any]] = set(tasks)
        loop = asyncio.get_running_loop()
        deadline = None if seconds is None else loop.time() + seconds
        while True:
            left = None if deadline is None else max(0.0, deadline - loop.time())
            done, pending = await asyncio.wait(
                pending | {waiter}, timeout=left, return_when=asyncio.FIRST_COMPLETED
            )
            pending.discard(waiter)
            if waiter in done or not done or not every or not pending:
                return
    finally:
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
