"""A 202 is a promise: tracking out of reach for longer than the old give-up time (25
tries, about 65 s) while signed deliveries keep arriving through the intake, then back;
every accepted event gets exactly one run. And the retry schedule outlives the worker:
one SIGKILLed and replaced in the middle of it neither restarts nor loses it."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import time
import uuid
import warnings
from typing import Any

import httpx
from sqlmodel import select

from shared.db import session_scope
from tests.support.asgi import HostRouter, LifespanApp
from tests.support.redis_server import free_port
from tests.webhooks.event.support import MovableClock, deliver, runs_of, tracking_on
from tests.webhooks.event.test_worker_kill import start_worker, worker_env
from tests.webhooks.support import push_body
from webhooks.models import TriggerExecution, WebhookEvent
from webhooks.settings import Settings
from webhooks.worker import create_worker

BEFORE, DURING = 5, 20
OLD_GIVE_UP_TRIES = 25
DEADLINE = 60.0


async def rows(app: LifespanApp) -> list[TriggerExecution]:
    async with session_scope(app.state["sessionmaker"]) as session:
        return list((await session.exec(select(TriggerExecution))).all())


async def until(condition: Any, what: str, deadline: float = DEADLINE) -> None:
    started = time.monotonic()
    while not await condition():
        assert time.monotonic() - started < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def test_every_event_accepted_while_tracking_was_away_gets_exactly_one_run(
    client,
    auth,
    wired_to_tracking,
    tracking,
    snapshot,
    tracking_app,
    identity_app,
    webhooks_app,
    fast: Settings,
):
    hook, _ = wired_to_tracking
    port = free_port()
    settings = fast.model_copy(
        update={
            "tracking_url": f"http://127.0.0.1:{port}",
            "worker_retry_delay": dt.timedelta(milliseconds=20),
            "worker_retry_max_delay": dt.timedelta(milliseconds=100),
        }
    )
    # The worker reaches identity in-process and tracking over real HTTP.
    network = httpx.AsyncHTTPTransport()
    router = HostRouter({"identity/": httpx.ASGITransport(app=identity_app), "127.0.0.1/": network})
    clock = MovableClock()

    async def drained() -> None:
        worker = create_worker(settings, http_transport=router, burst=True, clock=clock)
        try:
            await asyncio.wait_for(worker.async_run(), DEADLINE)
        finally:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", "Call to deprecated close", DeprecationWarning)
                await worker.close()

    accepted = []
    async with tracking_on(tracking_app, port):
        for i in range(BEFORE):
            await deliver(client, hook, push_body(actor=f"before-{i}"), f"before-{i}")
            accepted.append(f"before-{i}")
        await drained()
    assert len(await runs_of(tracking, auth, snapshot)) == BEFORE

    # Tracking is gone (its port refuses connections) while deliveries keep arriving.
    worker = asyncio.create_task(drained())
    for i in range(DURING):
        await deliver(client, hook, push_body(actor=f"during-{i}"), f"during-{i}")
        accepted.append(f"during-{i}")
        clock.offset += dt.timedelta(minutes=1)  # as if a minute passed between them
        await asyncio.sleep(0.05)

    async def past_the_old_give_up() -> bool:
        waiting = [r for r in await rows(webhooks_app) if r.delivery_id.startswith("during")]
        return len(waiting) == DURING and min(r.attempts for r in waiting) > OLD_GIVE_UP_TRIES

    await until(past_the_old_give_up, "every waiting execution to pass 25 tries")
    waiting = [r for r in await rows(webhooks_app) if r.status != "dispatched"]
    assert len(waiting) == DURING
    assert {r.status for r in waiting} == {"pending"}
    assert all(r.error and r.error.startswith("tracking unreachable") for r in waiting)
    assert clock.offset > dt.timedelta(seconds=65)
    assert not worker.done()

    async with tracking_on(tracking_app, port):
        await worker
    await network.aclose()

    executions = await rows(webhooks_app)
    assert {r.status for r in executions} == {"dispatched"}
    runs = await runs_of(tracking, auth, snapshot)
    delivered = [
        run["metadata"]["trigger_execution_info"]["webhook_upstream_event"]["codehost"][
            "delivery_id"
        ]
        for run in runs
    ]
    assert sorted(delivered) == sorted(accepted)  # each accepted event once, none twice
    assert {r.run_id for r in executions} == {uuid.UUID(run["id"]) for run in runs}


HORIZON = 5.0


async def test_a_sigkilled_worker_neither_restarts_nor_loses_the_retry_schedule(
    client, auth, wired, webhooks_app, webhooks_settings, tmp_path
):
    """Tracking (and the login in front of it) refuse connections throughout; a worker is
    SIGKILLed in the middle of the retries and another started: the execution fails at
    its horizon counted from the event's receipt, not from the new worker's start."""
    hook, _ = wired
    await deliver(client, hook, push_body("main"), "d-killed")
    env = {
        **worker_env(webhooks_settings, f"http://127.0.0.1:{free_port()}"),
        "WORKER_RETRY_HORIZON": f"PT{HORIZON}S",
        "WORKER_RETRY_DELAY": "PT0.1S",
        "WORKER_RETRY_MAX_DELAY": "PT0.4S",
    }
    log = tmp_path / "worker.log"

    async def tries() -> int:
        return sum(r.attempts for r in await rows(webhooks_app))

    first = start_worker(env, log)
    try:
        await until(lambda: _at_least(tries, 3), "three tries")
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    killed_at = dt.datetime.now(dt.UTC)
    tries_at_kill = await tries()

    second = start_worker(env, log)
    try:

        async def failed() -> bool:
            return [r.status for r in await rows(webhooks_app)] == ["failed"]

        await until(failed, "the execution to fail at its horizon", deadline=30)
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=15)

    (execution,) = await rows(webhooks_app)
    assert execution.error is not None
    assert execution.error.startswith("gave up after retrying for 0:00:05: "), log.read_text()
    assert execution.attempts > tries_at_kill
    received = await _received_at(webhooks_app, execution)
    failed_at = _aware(execution.updated)
    assert failed_at - received >= dt.timedelta(seconds=HORIZON)
    # A schedule started afresh by the new worker would end a horizon after the kill.
    assert failed_at < killed_at + dt.timedelta(seconds=HORIZON)


async def _at_least(count: Any, n: int) -> bool:
    return bool(await count() >= n)


async def _received_at(app: LifespanApp, execution: TriggerExecution) -> dt.datetime:
    async with session_scope(app.state["sessionmaker"]) as session:
        event = await session.get(WebhookEvent, execution.event_id)
    assert event is not None
    return _aware(event.received_at)


def _aware(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
