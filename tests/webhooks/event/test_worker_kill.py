"""At-least-once for real: the worker process is SIGKILLed in the middle of a batch and a
new one started; afterwards every accepted event has been processed exactly once (one
execution, one run requested under one idempotency key), within seconds. And a SIGTERM
(a rollout) lets the jobs in flight finish before the worker exits."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from sqlalchemy import func
from sqlmodel import col, select
from starlette.types import Receive, Scope, Send

from shared.db import session_scope
from tests.support.asgi import LifespanApp
from tests.support.redis_server import free_port
from tests.webhooks.support import SnapshotRuns, codehost_headers, push_body
from webhooks.models import TriggerExecution, WebhookEvent
from webhooks.settings import Settings

EVENTS = 60
DEADLINE = 45.0


@contextmanager
def serving(runs: SnapshotRuns) -> Iterator[str]:
    """The snapshot-run fake over real HTTP (the worker is another process)."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(runs.app(), host="127.0.0.1", port=port, log_level="error")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the fake did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


class SlowRuns(SnapshotRuns):
    """Answers take a little while, as a real tracking's would; the run requests after the
    first ``hold_after`` wait for ``release``, so a batch is in flight when the worker
    dies, however fast the machine."""

    def __init__(self, hold_after: int) -> None:
        super().__init__()
        self.hold_after = hold_after
        self.arrived = 0
        self.held = 0
        self.release = threading.Event()

    def app(self) -> Any:
        inner = super().app()

        async def slow(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                await asyncio.sleep(0.03)
            if scope["type"] == "http" and scope["path"].endswith("/runs"):
                self.arrived += 1
                if self.arrived > self.hold_after and not self.release.is_set():
                    self.held += 1
                    await asyncio.to_thread(self.release.wait, DEADLINE)
            await inner(scope, receive, send)

        return slow


class HeldRuns(SnapshotRuns):
    """Each run request is held ``delay`` seconds; ``started`` counts those that came in."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay
        self.started = 0

    def app(self) -> Any:
        inner = super().app()

        async def held(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope["path"].endswith("/runs"):
                self.started += 1
                await asyncio.sleep(self.delay)
            await inner(scope, receive, send)

        return held


def worker_env(settings: Settings, tracking_url: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONUNBUFFERED": "1",
        "DATABASE_URL": settings.database_url,
        "REDIS_URL": settings.redis_url,
        "REDIS_NAMESPACE": settings.redis_namespace,
        "WEBHOOK_SECRET_KEYS": settings.webhook_secret_keys.get_secret_value(),
        "TRACKING_URL": tracking_url,
        "IDENTITY_URL": tracking_url,  # the fake also answers the client-credentials login
        "SERVICE_CLIENT_ID": "webhooks",
        "SERVICE_CLIENT_SECRET": "s",
        "WORKER_JOB_TIMEOUT": "PT2S",
        "WORKER_LEASE_MARGIN": "PT1S",
        "WORKER_MAX_JOBS": "5",
        "WORKER_POLL_DELAY": "PT0.05S",
        "WORKER_RETRY_DELAY": "PT0.2S",
        "LOG_JSON": "false",
        "LOG_LEVEL": "WARNING",
    }


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "webhooks.worker"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


@pytest.fixture
async def fake_tracking() -> AsyncIterator[tuple[SlowRuns, str]]:
    runs = SlowRuns(hold_after=10)
    with serving(runs) as url:
        try:
            yield runs, url
        finally:
            runs.release.set()  # before the server stops: it waits for held requests


async def accept_pushes(
    client: Any, auth: dict[str, str], hook: dict[str, Any], project: dict[str, Any], count: int
) -> None:
    """A trigger on every push to ``hook``, then ``count`` pushes accepted (one event each)."""
    trigger = await client.post(
        "/api/v1/webhook_triggers",
        json={
            "project": project["id"],
            "name": "every-push",
            "webhook_id": hook["id"],
            "snapshot_id": str(uuid.uuid4()),
            "configuration": {"target_events": [{"type": "push"}]},
        },
        headers=auth,
    )
    assert trigger.status_code == 200, trigger.text
    for i in range(count):
        body = push_body(actor=f"user-{i}")  # one event each (the body names it)
        headers = codehost_headers(hook["secret"], body, delivery=f"delivery-{i}")
        response = await client.post(
            f"/api/v1/webhooks/codehost/{hook['id']}/events", content=body, headers=headers
        )
        assert response.status_code == 202


async def processed(app: LifespanApp) -> int:
    async with session_scope(app.state["sessionmaker"]) as session:
        query = select(func.count()).where(col(WebhookEvent.status) == "processed")
        return int((await session.exec(query)).one())


async def test_worker_killed_mid_batch_loses_and_doubles_nothing(
    client, auth, create_webhook, project, webhooks_app, webhooks_settings, fake_tracking, tmp_path
):
    runs, tracking_url = fake_tracking
    await accept_pushes(client, auth, await create_webhook("codehost"), project, EVENTS)

    settings: Settings = webhooks_app.state["settings"]

    async def queued() -> int:
        return int(await webhooks_app.state["redis"].zcard(settings.queue_name))

    env = worker_env(webhooks_settings, tracking_url)
    log = tmp_path / "worker.log"
    first = start_worker(env, log)
    started = time.monotonic()
    try:
        while runs.held == 0:  # ten runs requested, the next ones held: a batch in flight
            assert first.poll() is None, log.read_text()
            assert time.monotonic() - started < DEADLINE, log.read_text()
            await asyncio.sleep(0.01)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        done_at_kill = await processed(webhooks_app)
        assert done_at_kill < EVENTS, "the batch finished before the kill"

        runs.release.set()
        second = start_worker(env, log)
        try:
            # Until every event is processed and arq has finished every job: a job's
            # event is committed before arq takes the job off the queue, and a SIGTERM
            # in between would leave it queued (harmlessly: its rerun does nothing).
            while await processed(webhooks_app) < EVENTS or await queued() > 0:
                assert second.poll() is None, log.read_text()
                assert time.monotonic() - started < DEADLINE, log.read_text()
                await asyncio.sleep(0.1)
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(timeout=15)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()

    async with session_scope(webhooks_app.state["sessionmaker"]) as session:
        rows = (await session.exec(select(TriggerExecution))).all()
        statuses = (await session.exec(select(WebhookEvent.status))).all()
    assert len(rows) == EVENTS
    assert {r.status for r in rows} == {"dispatched"}
    assert len({r.event_id for r in rows}) == EVENTS
    assert sorted(statuses) == ["processed"] * EVENTS
    # One run per event; a request repeated after the kill reused its execution's key.
    assert len(runs.runs) == EVENTS
    assert {c["key"] for c in runs.calls} == {str(r.id) for r in rows}
    assert await queued() == 0
    assert time.monotonic() - started < DEADLINE
    print(  # noqa: T201  (the numbers the report quotes)
        f"\nkill test: {done_at_kill}/{EVENTS} processed at the kill, "
        f"{len(runs.calls)} run requests for {len(runs.runs)} runs, "
        f"{time.monotonic() - started:.1f}s"
    )


async def test_sigterm_lets_the_jobs_in_flight_finish(
    client, auth, create_webhook, project, webhooks_app, webhooks_settings, tmp_path
):
    """arq's default cancels running jobs on SIGTERM (they run again later); ours waits
    for them, up to the job timeout, so a rollout repeats no run request."""
    jobs = 3
    await accept_pushes(client, auth, await create_webhook("codehost"), project, jobs)
    runs = HeldRuns(delay=1.0)
    with serving(runs) as tracking_url:
        env = worker_env(webhooks_settings, tracking_url) | {"WORKER_JOB_TIMEOUT": "PT10S"}
        log = tmp_path / "worker.log"
        worker = start_worker(env, log)
        try:
            started = time.monotonic()
            while runs.started < jobs:
                assert worker.poll() is None, log.read_text()
                assert time.monotonic() - started < DEADLINE, log.read_text()
                await asyncio.sleep(0.01)
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=15) == 0, log.read_text()
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    # Every job in flight at the SIGTERM finished: its event processed, its run started.
    assert await processed(webhooks_app) == jobs
    assert len(runs.runs) == jobs
    assert len(runs.calls) == jobs
