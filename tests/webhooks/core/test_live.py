"""The Redis side of the intake: pipelined script calls and the version check."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError, ResponseError, TimeoutError

from shared.redis import Keys, create_redis
from tests.support.redis_server import free_port
from webhooks.core.live import LiveState, Outcome, ScriptPipe, _Replies


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


def _unique_script(body: str) -> str:
    """A script Redis has never seen (unique text): its first call meets NOSCRIPT."""
    return f"-- {uuid.uuid4()}\n{body}"


async def connected_doubler(
    redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> tuple[ScriptPipe, _Replies, list[bytes]]:
    """A connected pipe running ``ARGV[1] * 2``, its connection, and the writes to it from
    now on."""
    pipe = ScriptPipe(redis, _unique_script("return tonumber(ARGV[1]) * 2"))
    await pipe([], [0])  # connects and loads the script
    protocol = pipe._protocol
    assert protocol is not None
    assert protocol.transport is not None
    writes: list[bytes] = []
    original = protocol.transport.write

    def counting(data: bytes) -> None:
        writes.append(bytes(data))
        original(data)

    monkeypatch.setattr(protocol.transport, "write", counting)
    return pipe, protocol, writes


async def test_concurrent_calls_share_writes_and_get_their_own_results(redis, monkeypatch):
    pipe, _, writes = await connected_doubler(redis, monkeypatch)
    results = await asyncio.gather(*(pipe([], [i]) for i in range(50)))
    assert results == [i * 2 for i in range(50)]
    assert len(writes) == 1  # the 50 calls of one turn of the loop: one write
    await pipe.aclose()


async def test_calls_made_while_replies_are_awaited_go_out_together_after_them(redis, monkeypatch):
    pipe, protocol, writes = await connected_doubler(redis, monkeypatch)
    held: list[bytes] = []
    answered = asyncio.Event()

    def hold(data: bytes) -> None:  # Redis answers... later
        held.append(data)
        answered.set()

    receive = protocol.data_received
    monkeypatch.setattr(protocol, "data_received", hold)
    first = asyncio.ensure_future(pipe([], [1]))
    await asyncio.wait_for(answered.wait(), 5)
    later = [asyncio.ensure_future(pipe([], [i])) for i in range(2, 12)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(writes) == 1  # the ten wait for the first one's reply
    monkeypatch.setattr(protocol, "data_received", receive)
    for data in held:
        receive(data)
    assert await asyncio.gather(first, *later) == [i * 2 for i in range(1, 12)]
    assert len(writes) == 2  # ... and then go out in one write
    await pipe.aclose()


async def test_a_script_unknown_to_redis_is_loaded_and_run_once(redis, redis_namespace):
    key = f"{redis_namespace}:runs"
    pipe = ScriptPipe(redis, _unique_script("return redis.call('INCR', KEYS[1])"))
    assert await pipe([key], []) == 1
    await redis.script_flush()  # as a restarted Redis: the script is unknown again
    assert await pipe([key], []) == 2
    await pipe.aclose()


async def test_a_failing_script_fails_only_its_own_caller(redis):
    pipe = ScriptPipe(
        redis,
        _unique_script("if ARGV[1] == 'bad' then return redis.error_reply('no') end return 1"),
    )
    results: list[object] = await asyncio.gather(
        pipe([], ["good"]), pipe([], ["bad"]), pipe([], ["good"]), return_exceptions=True
    )
    good, bad, also_good = results
    assert (good, also_good) == (1, 1)
    assert isinstance(bad, ResponseError)
    await pipe.aclose()


async def test_a_lost_connection_fails_its_callers_and_the_next_call_reconnects(redis):
    pipe = ScriptPipe(redis, _unique_script("return 7"))
    assert await pipe([], []) == 7
    first = pipe._protocol
    assert first is not None
    assert first.transport is not None
    first.transport.abort()  # as Redis going away
    await asyncio.sleep(0)
    assert await pipe([], []) == 7
    assert pipe._protocol is not first
    await pipe.aclose()


async def test_an_unreachable_redis_is_a_connection_error(redis_url):
    dead = create_redis(f"redis://127.0.0.1:{free_port()}/0", timeout=0.5)
    pipe = ScriptPipe(dead, "return 1")
    with pytest.raises(ConnectionError):
        await pipe([], [])
    await dead.aclose()


async def test_a_reply_later_than_the_socket_timeout_drops_the_connection():
    # A server that accepts and never answers.
    accepted: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda _, w: accepted.append(w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    silent = create_redis(f"redis://127.0.0.1:{port}/0", timeout=0.2)
    pipe = ScriptPipe(silent, "return 1")
    with pytest.raises(TimeoutError):
        await pipe([], [])
    for writer in accepted:
        writer.close()
    server.close()
    await server.wait_closed()
    await silent.aclose()


async def test_credentials_and_database_of_the_url_are_used(redis, redis_url, redis_namespace):
    # AUTH with a wrong password is refused before any script runs.
    url = redis_url.replace("redis://", "redis://nobody:wrong@", 1)
    refused = create_redis(url)
    with pytest.raises(ConnectionError, match="refused"):
        await ScriptPipe(refused, "return 1")([], [])
    await refused.aclose()
    # SELECT: the script's write lands in the URL's database.
    other = create_redis(redis_url.rsplit("/", 1)[0] + "/5")
    key = f"{redis_namespace}:db"
    pipe = ScriptPipe(other, "return redis.call('SET', KEYS[1], '1')")
    await pipe([key], [])
    assert await redis.exists(key) == 0
    assert await other.exists(key) == 1
    await other.delete(key)
    await pipe.aclose()
    await other.aclose()


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
