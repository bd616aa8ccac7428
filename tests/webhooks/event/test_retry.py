"""Transient failures are retried on a schedule in time (capped exponential backoff with
jitter, until the horizon); tracking's answers sorted into transient and lasting ones (a
refusal of the worker's own token is transient: it gets a new one); settings that would
let a job expire before its horizon refused."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from shared.auth import KeysUnavailable
from shared.db import session_scope, utcnow
from tests.support.asgi import HostRouter, Outage, running
from tests.support.redis_server import free_port
from tests.webhooks.event.support import TRIGGERS, MovableClock, deliver, executions, runs_of
from tests.webhooks.support import SnapshotRuns, push_body
from tracking.app import create_app as create_tracking_app
from webhooks.event.dispatch import TrackingSnapshotRunner, TransientDispatchError, transient
from webhooks.event.retry import RetryPolicy
from webhooks.settings import Settings
from webhooks.trigger.repository import TriggerRepository

T0 = datetime(2026, 11, 26, tzinfo=UTC)
SECOND = timedelta(seconds=1)
TWO_SECOND_JOBS = {"worker_job_timeout": 2 * SECOND}  # a try's budget: 1.8 s


def policy(draw: float, horizon: timedelta = timedelta(hours=24)) -> RetryPolicy:
    return RetryPolicy(
        first_delay=2 * SECOND, max_delay=300 * SECOND, horizon=horizon, random=lambda: draw
    )


def test_the_delay_doubles_from_the_first_up_to_the_cap():
    longest = policy(1.0)
    delays = [longest.delay(n, T0, T0) for n in range(1, 12)]
    assert delays == [SECOND * s for s in (2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300)]
    assert policy(1.0).delay(10_000, T0, T0) == 300 * SECOND  # no overflow, however many


def test_the_jitter_keeps_at_least_half_of_the_delay():
    assert policy(0.0).delay(3, T0, T0) == 4 * SECOND
    assert policy(0.5).delay(3, T0, T0) == 6 * SECOND


def test_the_last_delay_ends_at_the_horizon():
    hour = policy(1.0, horizon=timedelta(hours=1))
    assert hour.delay(20, T0 + timedelta(minutes=59), T0) == 60 * SECOND


def test_past_the_horizon_there_is_no_next_try():
    assert policy(1.0).delay(1, T0 + timedelta(hours=24), T0) is None
    assert policy(1.0).delay(1, T0 + timedelta(hours=23, minutes=59), T0) is not None


@pytest.mark.parametrize("status", [408, 425, 429, 500, 501, 502, 503, 504, 599])
def test_timeouts_throttling_and_5xx_are_transient(status):
    assert transient(httpx.Response(status))


def test_a_conflict_tracking_says_will_pass_is_transient():
    """Tracking's answer while the same Idempotency-Key is still being processed."""
    assert transient(httpx.Response(409, headers={"Retry-After": "1"}))


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_credential_is_transient(status):
    """About the worker's token (expired, revoked, not checkable now), not the event."""
    assert transient(httpx.Response(status))


@pytest.mark.parametrize("status", [400, 404, 405, 409, 410, 413, 415, 422])
def test_other_4xx_are_lasting_refusals(status):
    assert not transient(httpx.Response(status))


async def test_tracking_not_listening_is_a_transient_failure():
    async with httpx.AsyncClient() as http:
        runner = TrackingSnapshotRunner(http, f"http://127.0.0.1:{free_port()}", None)
        with pytest.raises(TransientDispatchError, match="tracking unreachable"):
            await runner.run(uuid.uuid4(), None, {"id": str(uuid.uuid4())})


def test_an_event_expiry_the_retries_could_outlast_is_refused(webhooks_settings):
    values = webhooks_settings.model_dump()
    with pytest.raises(ValidationError, match="EVENT_EXPIRY must exceed"):
        Settings(**{**values, "event_expiry": timedelta(hours=24)})
    with pytest.raises(ValidationError, match="WORKER_RETRY_DELAY must be positive"):
        Settings(**{**values, "worker_retry_delay": timedelta(minutes=10)})
    Settings(**{**values, "event_expiry": timedelta(hours=25)})


class ScriptedRuns(SnapshotRuns):
    """The snapshot-run stand-in answering its next calls with ``statuses`` first (a 409
    as tracking's idempotency records answer a request still being processed)."""

    def __init__(self, *statuses: int) -> None:
        super().__init__()
        self.statuses = list(statuses)

    def app(self) -> Any:
        inner = super().app()

        async def scripted(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope["path"].endswith("/runs") and self.statuses:
                status = self.statuses.pop(0)
                self.calls.append(
                    {"status": status, "authorization": _header(scope, b"authorization")}
                )
                headers = {"Retry-After": "1"} if status == 409 else None
                answer = JSONResponse({"detail": "scripted"}, status_code=status, headers=headers)
                await answer(scope, receive, send)
                return
            await inner(scope, receive, send)

        return scripted


def _header(scope: Scope, name: bytes) -> str | None:
    return next((v.decode() for k, v in scope["headers"] if k == name), None)


def runs_answered_by(router: HostRouter, app: ASGIApp) -> None:
    """Tracking's snapshot-run route answered by ``app`` (the rest by tracking)."""
    stand_in = {"tracking/api/v1/pipeline_snapshots": httpx.ASGITransport(app=app)}
    router.routes = {**stand_in, **router.routes}


def scripted(router: HostRouter, *statuses: int) -> ScriptedRuns:
    runs = ScriptedRuns(*statuses)
    runs_answered_by(router, runs.app())
    return runs


async def test_a_request_still_processing_is_retried_and_ends_with_the_executions_one_run(
    client, auth, wired, drain, router
):
    """Tracking answers 409 with Retry-After while it still runs this execution's earlier
    request (same Idempotency-Key); asked again, it answers with that request's run."""
    runs = scripted(router, 409, 429, 502)
    hook, trigger = wired
    await deliver(client, hook, push_body("main"), "d-409")
    await drain()
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "dispatched"
    assert execution["attempts"] == 4
    assert execution["run_id"] == next(iter(runs.runs.values()))
    assert len(runs.runs) == 1


async def test_a_bad_request_fails_at_once_with_its_reason(client, auth, wired, drain, router):
    runs = scripted(router, 422)
    hook, trigger = wired
    await deliver(client, hook, push_body("main"), "d-422")
    await drain()
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "failed"
    assert execution["error"] == 'tracking answered 422: {"detail":"scripted"}'
    assert execution["attempts"] == 1
    assert [call["status"] for call in runs.calls] == [422]


async def test_an_execution_waiting_for_tracking_runs_after_its_trigger_is_deactivated(
    client, auth, wired, drain, snapshot_runs
):
    """Accepted and matched is a promise: a trigger changed while its execution waited
    does not strand it."""
    hook, trigger = wired
    snapshot_runs.fail_next = 1
    await deliver(client, hook, push_body("main"), "d-deactivated")
    await drain(jobs=1)
    response = await client.put(f"{TRIGGERS}/{trigger['id']}", json={"active": False}, headers=auth)
    assert response.status_code == 200, response.text
    await drain()
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "dispatched"
    assert len(snapshot_runs.runs) == 1


@pytest.fixture
async def refused(client, auth, wired, drain, snapshot_runs):
    """An execution tracking refused (the snapshot was gone), and would take now."""
    hook, trigger = wired
    snapshot_runs.refuse = True
    await deliver(client, hook, push_body("main"), "d-refused")
    await drain()
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "failed"
    snapshot_runs.refuse = False
    return trigger, execution


async def test_a_retry_job_waits_for_the_request_that_queued_it_to_commit(
    client, auth, refused, drain, snapshot_runs, webhooks_app, webhooks_settings
):
    trigger, execution = refused
    execution_id = uuid.UUID(execution["id"])
    now = utcnow()
    await webhooks_app.state["jobs"].retry_execution(execution_id, now)  # not committed yet
    await drain(jobs=1)
    assert await webhooks_app.state["redis"].zcard(webhooks_settings.queue_name) == 1
    assert len(snapshot_runs.calls) == 1
    async with session_scope(webhooks_app.state["sessionmaker"]) as session:
        assert await TriggerRepository(session).mark_retried(execution_id, now)  # committed
    await drain()
    (done,) = await executions(client, auth, trigger)
    assert done["status"] == "dispatched"
    assert len(snapshot_runs.runs) == 1


async def test_a_retry_job_whose_request_never_committed_does_nothing(
    client, auth, refused, drain, snapshot_runs, webhooks_app, webhooks_settings
):
    trigger, execution = refused
    await webhooks_app.state["jobs"].retry_execution(uuid.UUID(execution["id"]), utcnow())
    await drain(clock=MovableClock(timedelta(minutes=2)))
    assert await webhooks_app.state["redis"].zcard(webhooks_settings.queue_name) == 0
    assert await executions(client, auth, trigger) == [execution]
    assert len(snapshot_runs.calls) == 1


async def test_a_job_failing_outside_a_run_request_fails_its_executions_at_the_horizon(
    client, auth, wired, drain, router
):
    """Tracking so slow that the try outlives its time budget (a job's own failure, not
    an answer): retried, and past the horizon the waiting execution fails with it."""
    runs = SnapshotRuns()
    inner = runs.app()

    async def stalled(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].endswith("/runs"):
            await asyncio.sleep(5)
        await inner(scope, receive, send)

    runs_answered_by(router, stalled)
    hook, trigger = wired
    await deliver(client, hook, push_body("main"), "d-stalled")
    await drain(jobs=1, **TWO_SECOND_JOBS)
    (waiting,) = await executions(client, auth, trigger)
    assert waiting["status"] == "pending"  # retried: the try's failure is not the event's
    await drain(clock=MovableClock(timedelta(hours=25)), **TWO_SECOND_JOBS)
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "failed"
    assert execution["error"] == "gave up after retrying for 1 day, 0:00:00: TimeoutError()"
    assert runs.runs == {}


async def test_a_try_still_unwinding_at_the_job_timeout_is_retried_not_dropped(
    client, auth, wired, drain, router, webhooks_app, webhooks_settings
):
    """A try cut off at its budget whose unwinding outlasts the job timeout (a cancelled
    request or transaction cleaning up on a CPU-starved worker): the event waits for its
    next try, and gets its one run then, rather than being dropped."""
    runs = SnapshotRuns()
    inner = runs.app()
    stalls = asyncio.Event()

    async def slow_to_unwind(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].endswith("/runs") and not stalls.is_set():
            stalls.set()
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                await asyncio.sleep(0.5)  # past the job timeout, 0.2 s after the budget
                raise
        await inner(scope, receive, send)

    runs_answered_by(router, slow_to_unwind)
    hook, trigger = wired
    await deliver(client, hook, push_body("main"), "d-unwinding")
    await drain(jobs=1, **TWO_SECOND_JOBS)
    assert stalls.is_set()
    (waiting,) = await executions(client, auth, trigger)
    assert waiting["status"] == "pending"
    assert await webhooks_app.state["redis"].zcard(webhooks_settings.queue_name) == 1
    await drain(**TWO_SECOND_JOBS)
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "dispatched"
    assert len(runs.runs) == 1


# The worker's own credential refused


@pytest.mark.parametrize("refusals", [(401, 401), (403,)], ids=["401", "403"])
async def test_a_refused_service_token_is_replaced_and_the_event_retried(
    client, auth, wired, drain, router, refusals
):
    """A 401 (also to the new token the auth flow tries at once) or a 403 is about the
    worker's token, not the event: the token is dropped, and the next try logs in for a
    new one and gets the run."""
    runs = scripted(router, *refusals)
    hook, trigger = wired
    await deliver(client, hook, push_body("main"), "d-refused-token")
    await drain()
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "dispatched"
    assert execution["attempts"] == 2
    assert execution["error"] is None
    assert len(runs.runs) == 1
    tokens = [call["authorization"] for call in runs.calls]
    assert len(tokens) == len(refusals) + 1
    assert len(set(tokens)) == len(tokens)  # no call carried a token refused before


REFUSED_TOKEN = 'tracking refused the worker\'s credentials with 401: {"detail":"scripted"}'


async def test_a_refused_service_token_waits_with_its_reason(client, auth, wired, drain, router):
    scripted(router, 401, 401)
    hook, trigger = wired
    await deliver(client, hook, push_body("main"), "d-refused-waits")
    minute = timedelta(seconds=60)
    await drain(jobs=1, worker_retry_delay=minute, worker_retry_max_delay=minute)
    (waiting,) = await executions(client, auth, trigger)
    assert waiting["status"] == "pending"
    assert waiting["attempts"] == 1
    assert waiting["error"] == REFUSED_TOKEN
    assert waiting["next_attempt_at"] is not None


async def test_a_service_token_refused_past_the_horizon_fails_with_that_reason(
    client, auth, wired, drain, router
):
    scripted(router, 401, 401)
    hook, trigger = wired
    await deliver(client, hook, push_body("main"), "d-refused-long")
    await drain(clock=MovableClock(timedelta(hours=24, seconds=1)))
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "failed"
    assert execution["error"] == f"gave up after retrying for 1 day, 0:00:00: {REFUSED_TOKEN}"


async def test_a_tracking_restarted_without_identitys_keys_gets_the_event_run_later(
    client, auth, wired_to_tracking, drain, router, identity_app, tracking_app, tracking, snapshot
):
    """Tracking restarted while it cannot reach identity has no keys to check the worker's
    token with: it answers 503 (it answered 401, and the event was lost), the worker
    retries, and once tracking fetches the keys the event gets its one run."""
    to_identity = Outage(httpx.ASGITransport(app=identity_app))
    to_identity.down = True
    settings = tracking_app.state["settings"].model_copy(
        update={"jwks_min_refresh_interval": timedelta(0), "http_retries": 0}
    )
    restarted = create_tracking_app(settings, http_transport=to_identity)
    async with running(restarted) as started:
        router.routes["tracking/"] = httpx.ASGITransport(app=started)
        hook, trigger = wired_to_tracking
        await deliver(client, hook, push_body("main"), "d-keyless-tracking")
        second = timedelta(seconds=1)
        await drain(jobs=1, worker_retry_delay=second, worker_retry_max_delay=second)
        (waiting,) = await executions(client, auth, trigger)
        assert waiting["status"] == "pending"
        unavailable = ["ServiceUnavailable", KeysUnavailable(retry_after=1).message]
        assert waiting["error"] == f"tracking answered 503: {json.dumps({'detail': unavailable})}"

        to_identity.down = False
        await drain()
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "dispatched"
    runs = await runs_of(tracking, auth, snapshot)
    assert [run["id"] for run in runs] == [execution["run_id"]]
