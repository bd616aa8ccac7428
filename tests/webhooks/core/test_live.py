"""The Redis side of the intake: batched script calls and the version check."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from shared.redis import Keys, create_redis
from webhooks.core.live import LiveState, Outcome, ScriptBatcher


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Redis]:
    client = create_redis(redis_url)
    yield client
    await client.aclose()


async def test_concurrent_calls_share_round_trips_and_get_their_own_results(redis, monkeypatch):
    # A script Redis has never seen (unique text): the first batch meets NOSCRIPT, loads it
    # and sends again.
    batcher = ScriptBatcher(redis, f"-- {uuid.uuid4()}\nreturn tonumber(ARGV[1]) * 2")
    sent: list[int] = []
    original = batcher._send

    async def counting(batch):
        sent.append(len(batch))
        return await original(batch)

    monkeypatch.setattr(batcher, "_send", counting)
    results = await asyncio.gather(*(batcher([], [i]) for i in range(50)))
    assert results == [i * 2 for i in range(50)]
    assert sum(sent) == 50
    assert len(sent) < 50


async def test_a_failing_script_fails_only_its_own_caller(redis):
    batcher = ScriptBatcher(
        redis,
        f"-- {uuid.uuid4()}\nif ARGV[1] == 'bad' then return redis.error_reply('no') end return 1",
    )
    results: list[object] = await asyncio.gather(
        batcher([], ["good"]), batcher([], ["bad"]), return_exceptions=True
    )
    good, bad = results
    assert good == 1
    assert isinstance(bad, ResponseError)


async def test_record_refuses_a_stale_version_and_counts_nothing(redis, redis_namespace):
    live = LiveState(redis, Keys(redis_namespace))
    webhook_id = uuid.uuid4()
    await live.publish(webhook_id, 2)
    assert await live.record(webhook_id, 1, "accepted", 1) is Outcome.STALE
    assert await live.stats([webhook_id]) == [{}]
    assert await live.record(webhook_id, 2, "accepted", 1) is Outcome.RECORDED
    (stats,) = await live.stats([webhook_id])
    assert stats[b"accepted_count"] == b"1"


async def test_publish_never_lowers_a_newer_version(redis, redis_namespace):
    live = LiveState(redis, Keys(redis_namespace))
    webhook_id = uuid.uuid4()
    await live.publish(webhook_id, 3)
    await live.publish(webhook_id, 2)
    assert await live.record(webhook_id, 3, "none", 1) is Outcome.NOTHING
    assert await live.record(webhook_id, 2, "none", 1) is Outcome.STALE


async def test_the_latest_error_wins_whatever_order_deliveries_land_in(redis, redis_namespace):
    live = LiveState(redis, Keys(redis_namespace))
    webhook_id = uuid.uuid4()
    await live.publish(webhook_id, 1)
    await live.record(webhook_id, 1, "auth_failed", 2_000, error="later")
    await live.record(webhook_id, 1, "invalid_payload", 1_000, error="earlier")
    (stats,) = await live.stats([webhook_id])
    assert stats[b"last_error_summary"] == b"later"
    assert stats[b"last_received_at"] == b"2000"
    assert (stats[b"auth_failed_count"], stats[b"invalid_payload_count"]) == (b"1", b"1")
