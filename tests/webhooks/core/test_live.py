"""The Redis side of the intake: the version check and the stats (the pipe that runs the
script is tested in tests/shared/test_redis_pipe.py)."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator

import pytest
from arq.constants import job_key_prefix
from redis.asyncio import Redis

from shared.redis import Keys, create_redis
from webhooks.core.live import Counted, LiveState, Outcome, QueuedJob


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Redis]:
    client = create_redis(redis_url)
    yield client
    await client.aclose()


@pytest.fixture
async def live(redis: Redis, redis_namespace: str) -> AsyncIterator[LiveState]:
    state = LiveState(
        redis,
        Keys(redis_namespace),
        queue=f"{redis_namespace}:queue",
        expires_ms=60_000,
    )
    yield state
    await state.aclose()


async def test_record_refuses_a_stale_version_and_counts_nothing(live):
    webhook_id = uuid.uuid4()
    await live.publish(webhook_id, 2)
    assert await live.record(webhook_id, 1, "accepted", 1) is Outcome.STALE
    assert await live.stats([webhook_id]) == [{}]
    assert await live.record(webhook_id, 2, "accepted", 1) is Outcome.RECORDED
    (stats,) = await live.stats([webhook_id])
    assert stats[b"accepted_count"] == b"1"


async def test_publish_never_lowers_a_newer_version(live):
    webhook_id = uuid.uuid4()
    await live.publish(webhook_id, 3)
    await live.publish(webhook_id, 2)
    assert await live.record(webhook_id, 3, "none", 1) is Outcome.NOTHING
    assert await live.record(webhook_id, 2, "none", 1) is Outcome.STALE


async def test_the_latest_error_wins_whatever_order_deliveries_land_in(live):
    webhook_id = uuid.uuid4()
    await live.publish(webhook_id, 1)
    await live.record(webhook_id, 1, "auth_failed", 2_000, error="later")
    await live.record(webhook_id, 1, "invalid_payload", 1_000, error="earlier")
    (stats,) = await live.stats([webhook_id])
    assert stats[b"last_error_summary"] == b"later"
    assert stats[b"last_received_at"] == b"2000"
    assert (stats[b"auth_failed_count"], stats[b"invalid_payload_count"]) == (b"1", b"1")


async def test_an_accepted_delivery_is_queued_at_its_time_once_while_its_job_key_exists(
    live, redis, redis_namespace
):
    webhook_id = uuid.uuid4()
    await live.publish(webhook_id, 1)
    job = QueuedJob(f"{redis_namespace}-job", b"the job")
    replay = QueuedJob(job.job_id, b"the replay")  # a job id names webhook and delivery id
    now_us = 1_700_000_000_123_999
    for sent, expected in ((job, Outcome.RECORDED), (replay, Outcome.DUPLICATE)):
        assert await live.record(webhook_id, 1, "accepted", now_us, job=sent) is expected
    job_key = f"{job_key_prefix}{job.job_id}"
    assert await redis.get(job_key) == b"the job"
    assert 0 < await redis.pttl(job_key) <= 60_000
    queued = await redis.zrange(f"{redis_namespace}:queue", 0, -1, withscores=True)
    assert queued == [(job.job_id.encode(), 1_700_000_000_123)]
    (stats,) = await live.stats([webhook_id])
    assert (stats[b"received_count"], stats[b"accepted_count"]) == (b"2", b"2")
    assert stats[b"last_accepted_at"] == str(now_us).encode()


def _scenario(seed: int) -> list[tuple[int, bool, Counted, int, str, str]]:
    """Deliveries to two webhooks: (webhook, current version?, outcome, time, error,
    delivery key); times collide and go backwards, delivery keys repeat."""
    rng = random.Random(seed)
    outcomes: tuple[Counted, ...] = (
        "accepted", "accepted", "accepted", "auth_failed", "invalid_payload", "none"
    )  # fmt: skip
    return [
        (
            rng.randrange(2),
            rng.random() < 0.9,
            rng.choice(outcomes),
            rng.randrange(1, 4) * 1_000_000_000_000_000 + rng.randrange(2),
            rng.choice(("", "bad signature", "not json")),
            rng.choice(("", "a", "b", "c", "d")),
        )
        for _ in range(rng.randrange(1, 40))
    ]


async def _replay(
    redis: Redis,
    namespace: str,
    scenario: list[tuple[int, bool, Counted, int, str, str]],
    *,
    together: bool,
) -> tuple[list[Outcome], list[dict[bytes, bytes]], list[tuple[bytes, float]], list[bytes | None]]:
    """Run ``scenario`` through a fresh LiveState (each delivery awaited alone, or all at
    once as one batch) and read back the outcomes, the stats, the queue and the jobs."""
    queue = f"{namespace}:queue"
    live = LiveState(redis, Keys(namespace), queue=queue, expires_ms=60_000)
    webhooks = [uuid.UUID(int=1), uuid.UUID(int=2)]
    try:
        for webhook_id in webhooks:
            await live.publish(webhook_id, 5)
        calls = []
        for index, (webhook, current, outcome, now, error, key) in enumerate(scenario):
            accepted = outcome == "accepted" and key != ""
            # A job's id names webhook and delivery id (the intake's are their hash).
            job = QueuedJob(f"{namespace}-{webhook}-{key}", f"job {index}".encode())
            calls.append(
                live.record(
                    webhooks[webhook],
                    5 if current else 4,
                    outcome,
                    now,
                    error="" if outcome == "accepted" else error,
                    job=job if accepted else None,
                )
            )
        if together:
            outcomes = await asyncio.gather(*calls)
        else:
            outcomes = [await call for call in calls]
        stats = await live.stats(webhooks)
        queued = await redis.zrange(queue, 0, -1, withscores=True)
        jobs = [
            await redis.get(f"{job_key_prefix}{namespace}-{webhook}-{key}")
            for webhook in range(len(webhooks))
            for key in "abcd"
        ]
    finally:
        await live.aclose()
    queued = [(member.replace(namespace.encode(), b"run"), score) for member, score in queued]
    return outcomes, stats, queued, jobs


@pytest.mark.parametrize("seed", range(12))
async def test_a_batch_of_deliveries_ends_as_if_each_had_run_alone(redis, redis_namespace, seed):
    scenario = _scenario(seed)
    alone = await _replay(redis, f"{redis_namespace}:alone", scenario, together=False)
    together = await _replay(redis, f"{redis_namespace}:together", scenario, together=True)
    assert together == alone
    assert any(outcome is Outcome.RECORDED for outcome in alone[0]) or len(scenario) < 5
