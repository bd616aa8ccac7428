"""The consumer, through a real arq worker (burst mode) on the real queue: triggers
matched, executions recorded, snapshot runs requested from tracking once."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta

from sqlmodel import select

from shared.db import session_scope
from tests.support.metrics import sample
from tests.tracking.pipeline_run.support import create_snapshot
from tests.webhooks.event.support import (
    TRIGGERS,
    MovableClock,
    deliver,
    executions,
    runs_of,
)
from tests.webhooks.support import SnapshotRuns, deliver_custom, job_key, push_body
from webhooks.event.batch_worker import TOMBSTONE
from webhooks.models import TriggerExecution, WebhookEvent

DELIVERIES = "platform_webhook_deliveries_total"
JOBS = "platform_worker_jobs_total"
# (name, labels) of the metrics a delivery moves, as the exposition shows them.
METRICS: list[tuple[str, dict[str, str]]] = [
    (DELIVERIES, {"provider": "codehost", "outcome": "accepted"}),
    (DELIVERIES, {"provider": "codehost", "outcome": "duplicate"}),
    (JOBS, {"function": "process_event", "outcome": "done"}),
    (JOBS, {"function": "process_event", "outcome": "retry"}),
    (JOBS, {"function": "process_event", "outcome": "dead_letter"}),
    ("platform_worker_executions_waiting_on_tracking_total", {}),
]


async def test_a_matching_event_starts_one_run_of_the_snapshot_in_tracking(
    client, auth, wired_to_tracking, drain, tracking, snapshot
):
    hook, trigger = wired_to_tracking
    await deliver(client, hook, push_body("main"), "d-1")
    await drain()
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "dispatched"
    assert execution["delivery_id"] == "d-1"
    (run,) = await runs_of(tracking, auth, snapshot)
    assert execution["run_id"] == run["id"]
    assert run["body"]["status"] == "initializing"
    assert run["resources"]["user"] is None  # started by the webhooks service
    upstream = run["metadata"]["trigger_execution_info"]["webhook_upstream_event"]
    assert upstream == {
        "codehost": {
            "webhook_id": hook["id"],
            "delivery_id": "d-1",
            "event_type": "push",
            "event": {
                "type": "push",
                "repo": "acme/app",
                "branch": "main",
                "actor": "alice",
                "commit": {"name": "main", "sha": "abc123"},
            },
        }
    }


async def test_an_event_processed_twice_runs_the_snapshot_once(
    client, auth, wired_to_tracking, drain, tracking, snapshot, webhooks_app
):
    """As a worker that died after tracking started the run and before it recorded so:
    the event is consumed again and its execution dispatched again."""
    hook, trigger = wired_to_tracking
    await deliver(client, hook, push_body("main"), "d-twice")
    await drain()
    (first,) = await runs_of(tracking, auth, snapshot)
    async with session_scope(webhooks_app.state["sessionmaker"]) as session:
        for event in (await session.exec(select(WebhookEvent))).all():
            event.status = "received"
        for row in (await session.exec(select(TriggerExecution))).all():
            row.status, row.run_id = "pending", None
    # The intake's replay window and tracking's idempotency records (Redis) are gone too:
    # only tracking's one run per trigger execution stands between the event and a second.
    redis, namespace = webhooks_app.state["redis"], webhooks_app.state["settings"].redis_namespace
    tombstone = job_key(hook["id"], body=push_body("main"))
    assert await redis.delete(tombstone) == 1
    found = [k async for k in redis.scan_iter(match=f"{namespace}:idempotency:*")]
    assert found
    await redis.delete(*found)
    await deliver(client, hook, push_body("main"), "d-twice")
    await drain()
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "dispatched"
    assert execution["attempts"] == 2
    assert execution["run_id"] == first["id"]
    assert [run["id"] for run in await runs_of(tracking, auth, snapshot)] == [first["id"]]


async def test_a_snapshot_tracking_does_not_know_fails_the_execution(client, auth, wired, drain):
    hook, trigger = wired  # its snapshot id is random: tracking answers 404
    await deliver(client, hook, push_body("main"), "d-unknown")
    await drain()
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "failed"
    assert execution["run_id"] is None
    assert "404" in execution["error"]


async def test_a_run_name_another_run_has_fails_at_once_with_trackings_reason(
    client, auth, wired_to_tracking, drain, tracking, snapshot, project
):
    """A 409 without Retry-After is a lasting refusal, not retried for a day."""
    hook, trigger = wired_to_tracking
    await deliver(client, hook, push_body(actor="a"), "d-first")
    await drain()
    fixed = await create_snapshot(tracking, auth, project, run_name_template="nightly")
    response = await client.put(
        f"{TRIGGERS}/{trigger['id']}", json={"snapshot_id": fixed["id"]}, headers=auth
    )
    assert response.status_code == 200, response.text
    for delivery in ("d-second", "d-third"):
        await deliver(client, hook, push_body(actor=delivery), delivery)
    await drain()
    later = [e for e in await executions(client, auth, trigger) if e["delivery_id"] != "d-first"]
    # Whichever of the two asked first got the name.
    ran, clash = sorted(later, key=lambda e: e["status"] == "failed")
    assert ran["status"] == "dispatched"
    assert clash["status"] == "failed"
    assert clash["attempts"] == 1
    assert clash["error"].startswith("tracking answered 409: ")
    assert "Found another existing pipeline run with the same name" in clash["error"]


async def test_the_stand_in_is_called_with_the_trigger_execution(
    client, auth, wired, drain, snapshot_runs: SnapshotRuns
):
    hook, trigger = wired
    await deliver(client, hook, push_body("main"), "d-1")
    await drain()
    (execution,) = await executions(client, auth, trigger)
    (call,) = snapshot_runs.calls
    assert call["snapshot_id"] == trigger["body"]["snapshot_id"]
    assert call["key"] == execution["id"]
    assert call["body"]["run_configuration"] == {"parameters": {"env": "prod"}}
    assert call["body"]["trigger_execution"]["id"] == execution["id"]
    assert call["body"]["trigger_execution"]["trigger_id"] == trigger["id"]
    assert call["authorization"].startswith("Bearer ey")  # identity's service token
    assert execution["run_id"] == snapshot_runs.runs[call["key"]]


async def test_the_raw_body_of_a_matched_event_is_kept(client, auth, wired, drain):
    hook, _ = wired
    body = push_body("main")
    await deliver(client, hook, body, "d-raw")
    await drain()
    response = await client.get(
        f"/api/v1/webhooks/{hook['id']}/events/raw", params={"delivery_id": "d-raw"}, headers=auth
    )
    assert response.status_code == 200
    assert response.json() == {"body": json.loads(body)}


async def test_an_event_no_trigger_matches_runs_nothing(client, auth, wired, drain, snapshot_runs):
    hook, trigger = wired
    await deliver(client, hook, push_body("dev"), "d-dev")
    await drain()
    assert await executions(client, auth, trigger) == []
    assert snapshot_runs.calls == []
    raw = await client.get(
        f"/api/v1/webhooks/{hook['id']}/events/raw", params={"delivery_id": "d-dev"}, headers=auth
    )
    assert raw.status_code == 404


async def test_an_event_delivered_again_after_the_window_runs_nothing_twice(
    client, auth, wired, drain, snapshot_runs, webhooks_app, webhooks_settings
):
    hook, trigger = wired
    await deliver(client, hook, push_body("main"), "d-again")
    await drain()
    # Within the replay window the job's tombstone absorbs the replay at the intake.
    redis = webhooks_app.state["redis"]
    tombstone = job_key(hook["id"], body=push_body("main"))
    assert await redis.get(tombstone) == TOMBSTONE
    await deliver(client, hook, push_body("main"), "d-again")
    assert await redis.zcard(webhooks_settings.queue_name) == 0
    # Once the window has passed (the tombstone is gone) the event is queued again.
    await redis.delete(tombstone)
    await deliver(client, hook, push_body("main"), "d-again")
    assert await redis.zcard(webhooks_settings.queue_name) == 1
    await drain()
    assert len(await executions(client, auth, trigger)) == 1
    assert len(snapshot_runs.calls) == 1


async def test_an_inactive_trigger_runs_nothing(client, auth, wired, drain, snapshot_runs):
    hook, trigger = wired
    await client.put(f"{TRIGGERS}/{trigger['id']}", json={"active": False}, headers=auth)
    await deliver(client, hook, push_body("main"), "d-off")
    await drain()
    assert snapshot_runs.calls == []


async def test_tracking_unavailable_is_retried_until_the_run_is_requested(
    client, auth, wired, drain, snapshot_runs
):
    hook, trigger = wired
    snapshot_runs.fail_next = 2
    before = [sample(*series) for series in METRICS]
    await deliver(client, hook, push_body("main"), "d-retry")
    await drain()
    assert [sample(*series) - was for series, was in zip(METRICS, before, strict=True)] == [
        1,  # accepted
        0,  # duplicate
        1,  # done
        2,  # retried
        0,  # dead letters
        2,  # waiting on tracking
    ]
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "dispatched"
    assert execution["attempts"] == 3
    assert len({c["key"] for c in snapshot_runs.calls}) == 1
    assert len(snapshot_runs.runs) == 1


async def test_tracking_unavailable_is_retried_past_25_tries_within_the_horizon(
    client, auth, wired, drain, snapshot_runs
):
    """Counted in time, not tries: an event received 23 hours ago is still tried again
    after 30 failures, and gets its run."""
    hook, trigger = wired
    snapshot_runs.fail_next = 30
    await deliver(client, hook, push_body("main"), "d-long")
    await drain(
        clock=MovableClock(timedelta(hours=23)),
        worker_retry_delay=timedelta(milliseconds=10),
        worker_retry_max_delay=timedelta(milliseconds=40),
    )
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "dispatched"
    assert execution["attempts"] == 31
    assert execution["error"] is None
    assert execution["next_attempt_at"] is None
    assert len(snapshot_runs.runs) == 1


async def test_tracking_unavailable_past_the_horizon_is_recorded_as_failed(
    client, auth, wired, drain, snapshot_runs
):
    hook, trigger = wired
    snapshot_runs.fail_next = 100
    given_up = sample("platform_worker_executions_given_up_total")
    await deliver(client, hook, push_body("main"), "d-down")
    await drain(clock=MovableClock(timedelta(hours=24, seconds=1)))
    assert sample("platform_worker_executions_given_up_total") == given_up + 1
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "failed"
    assert execution["error"] == (
        'gave up after retrying for 1 day, 0:00:00: tracking answered 503: {"detail":"busy"}'
    )
    assert execution["next_attempt_at"] is None
    assert len(snapshot_runs.calls) == 1


async def test_an_event_failing_past_its_horizon_is_a_dead_letter(client, wired, drain):
    """The worker's own database out of reach when the event's horizon has passed: the
    job ends, counted and logged as a dead letter (its failure cannot be recorded)."""
    hook, _ = wired
    await deliver(client, hook, push_body("main"), "d-dead")
    dead = (JOBS, {"function": "process_event", "outcome": "dead_letter"})
    before = sample(*dead)
    await drain(
        clock=MovableClock(timedelta(hours=24, seconds=1)),
        database_url="postgresql+asyncpg://postgres@127.0.0.1:9/unreachable",
    )
    assert sample(*dead) == before + 1


async def test_a_waiting_execution_shows_its_last_error_and_next_try(
    client, auth, wired, drain, snapshot_runs, webhooks_settings
):
    hook, trigger = wired
    snapshot_runs.fail_next = 100
    await deliver(client, hook, push_body("main"), "d-waits")
    clock = MovableClock()
    # One try; the next is the job's score in Redis, a minute (with jitter: 30-60 s) on.
    minute = timedelta(seconds=60)
    await drain(clock=clock, jobs=1, worker_retry_delay=minute, worker_retry_max_delay=minute)
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "pending"
    assert execution["attempts"] == 1
    assert execution["error"] == 'tracking answered 503: {"detail":"busy"}'
    waits = datetime.fromisoformat(execution["next_attempt_at"]) - datetime.fromisoformat(
        execution["updated"]
    )
    assert timedelta(seconds=29) < waits <= timedelta(seconds=61)


async def test_a_refused_run_is_recorded_as_failed_without_retrying(
    client, auth, wired, drain, snapshot_runs
):
    hook, trigger = wired
    snapshot_runs.refuse = True
    await deliver(client, hook, push_body("main"), "d-refused")
    await drain()
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "failed"
    assert "404" in execution["error"]
    assert len(snapshot_runs.calls) == 1


async def test_an_admins_retry_matches_its_own_events_body_when_delivery_ids_repeat(
    client, auth, create_webhook, project, drain, snapshot_runs
):
    """A `sha256=` sender's X-Webhook-Delivery is an unsigned label: two events (two
    bodies) may carry the same one, and each execution is retried against its own body."""
    hook = await create_webhook("custom")
    triggers = {}
    for env in ("prod", "dev"):
        target = {"type": "dynamic", "event_type": "build.finished", "filters": {"env": env}}
        body = {
            "project": project["id"],
            "name": f"{env}-builds",
            "webhook_id": hook["id"],
            "snapshot_id": str(uuid.uuid4()),
            "configuration": {"target_events": [target]},
        }
        response = await client.post(TRIGGERS, json=body, headers=auth)
        assert response.status_code == 200, response.text
        triggers[env] = response.json()
    snapshot_runs.refuse = True
    for env in ("prod", "dev"):
        await deliver_custom(client, hook, json.dumps({"env": env}).encode(), "d-same")
    await drain()
    snapshot_runs.refuse = False
    for trigger in triggers.values():
        (execution,) = await executions(client, auth, trigger)
        assert execution["status"] == "failed"
        path = f"{TRIGGERS}/{trigger['id']}/executions/{execution['id']}/retry"
        assert (await client.post(path, headers=auth)).status_code == 202
    await drain()
    for trigger in triggers.values():
        (execution,) = await executions(client, auth, trigger)
        assert execution["status"] == "dispatched"
        first, retried = (c["body"] for c in snapshot_runs.calls if c["key"] == execution["id"])
        assert retried == first  # the event as its trigger matched it, from its own body
        upstream = retried["trigger_execution"]["webhook_upstream_event"]["custom"]
        assert upstream["delivery_id"] == "d-same"
        assert upstream["event"] == {"type": "build.finished"}
