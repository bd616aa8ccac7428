"""The Redis side of the intake: the version check and the stats (the pipe that runs the
script is tested in tests/shared/test_redis_pipe.py)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from shared.redis import Keys, create_redis
from webhooks.core.live import LiveState, Outcome


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Redis]:
    client = create_redis(redis_url)
    yield client
    await client.aclose()


@pytest.fixture
async def live(redis: Redis, redis_namespace: str) -> AsyncIterator[LiveState]:
    state = LiveState(redis, Keys(redis_namespace))
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
