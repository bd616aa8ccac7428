"""The pipelined Redis lane against a real Redis: replies and error replies, batching,
scripts, lost connections, timeouts, credentials and database, and redis-py for the
connections it does not speak."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import hiredis
import pytest
from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.connection import Connection
from redis.exceptions import (
    ConnectionError,
    NoScriptError,
    RedisError,
    ResponseError,
    TimeoutError,
)

from shared import redis_pipe
from shared.redis import create_redis
from shared.redis_batch import BatchedScript
from shared.redis_pipe import (
    RedisPipe,
    Script,
    _Replies,
    close_pipe_of,
    pipe_of,
)
from tests.support.redis_server import free_port


@pytest.fixture
async def pipe(redis_client: Redis) -> AsyncIterator[RedisPipe]:
    pipe = RedisPipe(redis_client)
    yield pipe
    await pipe.aclose()


def _unique_script(body: str) -> Script:
    """A script Redis has never seen (unique text): its first call meets NOSCRIPT."""
    return Script(f"-- {uuid.uuid4()}\n{body}")


async def connected(
    pipe: RedisPipe, monkeypatch: pytest.MonkeyPatch
) -> tuple[_Replies, list[bytes]]:
    """The pipe's connection (made now) and the writes to it from now on."""
    assert await pipe("PING") == b"PONG"
    protocol = pipe._protocol
    assert protocol is not None
    assert protocol.transport is not None
    writes: list[bytes] = []
    original = protocol.transport.write

    def counting(data: bytes) -> None:
        writes.append(bytes(data))
        original(data)

    monkeypatch.setattr(protocol.transport, "write", counting)
    return protocol, writes


async def blocked_on(redis: Redis, client_id: int, command: str) -> None:
    """Wait until the connection ``client_id`` is blocked in ``command`` on the server."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        [info] = await redis.client_list(client_id=[str(client_id)])
        if info["cmd"] == command and "b" in info["flags"]:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"client {client_id} never blocked in {command}")


async def test_a_command_returns_the_reply_as_redis_sent_it(pipe, redis_namespace):
    key, counter, items = (f"{redis_namespace}:{name}" for name in ("key", "counter", "items"))
    assert await pipe("SET", key, "value", "EX", 60) == b"OK"
    assert await pipe("SET", key, "other", "NX") is None
    assert await pipe("GET", key) == b"value"
    assert await pipe("MGET", key, f"{redis_namespace}:missing") == [b"value", None]
    assert await pipe("INCRBY", counter, 5) == 5
    assert await pipe("RPUSH", items, b"\x00binary", 1.5) == 2
    assert await pipe("LRANGE", items, 0, -1) == [b"\x00binary", b"1.5"]


async def test_an_error_reply_raises_redis_pys_exception_in_its_caller_only(pipe, redis_namespace):
    text = f"{redis_namespace}:text"
    await pipe("SET", text, "not a number")
    protocol = pipe._protocol
    results = await asyncio.gather(
        pipe("GET", text),
        pipe("INCR", text),
        pipe("EVALSHA", "0" * 40, 0),
        pipe("NOSUCHCOMMAND"),
        pipe("ECHO", "after"),
        return_exceptions=True,
    )
    value, not_integer, no_script, unknown, after = results
    assert (value, after) == (b"not a number", b"after")
    assert isinstance(not_integer, ResponseError)
    assert "not an integer" in str(not_integer)
    assert isinstance(no_script, NoScriptError)  # the class redis-py raises for NOSCRIPT
    assert isinstance(unknown, ResponseError)
    assert pipe._protocol is protocol  # an error reply is an answer: the connection stays


async def test_concurrent_commands_share_one_write_and_get_their_own_replies(pipe, monkeypatch):
    _, writes = await connected(pipe, monkeypatch)
    replies = await asyncio.gather(*(pipe("ECHO", i) for i in range(100)))
    assert replies == [str(i).encode() for i in range(100)]
    assert len(writes) == 1  # the 100 commands of one turn of the loop: one write


async def test_commands_made_while_replies_are_awaited_go_out_together_after_them(
    pipe, monkeypatch
):
    protocol, writes = await connected(pipe, monkeypatch)
    held: list[bytes] = []
    answered = asyncio.Event()

    def hold(data: bytes) -> None:  # Redis answers... later
        held.append(data)
        answered.set()

    receive = protocol.data_received
    monkeypatch.setattr(protocol, "data_received", hold)
    first = asyncio.ensure_future(pipe("ECHO", 1))
    await asyncio.wait_for(answered.wait(), 5)
    later = [asyncio.ensure_future(pipe("ECHO", i)) for i in range(2, 12)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(writes) == 1  # the ten wait for the first one's reply
    monkeypatch.setattr(protocol, "data_received", receive)
    for data in held:
        receive(data)
    assert await asyncio.gather(first, *later) == [str(i).encode() for i in range(1, 12)]
    assert len(writes) == 2  # ... and then go out in one write


async def test_a_killed_connection_fails_its_callers_and_the_next_command_reconnects(
    redis_url, redis_client, redis_namespace
):
    client = create_redis(redis_url, timeout=5)
    pipe = RedisPipe(client)
    try:
        first_id = await pipe("CLIENT", "ID")
        blocked = asyncio.ensure_future(pipe("BLPOP", f"{redis_namespace}:never", 10))
        await blocked_on(redis_client, first_id, "blpop")
        queued = asyncio.ensure_future(pipe("ECHO", "queued behind it"))
        await asyncio.sleep(0)
        await redis_client.client_kill_filter(_id=first_id)  # as Redis dropping the connection
        for waiting in (blocked, queued):
            with pytest.raises(ConnectionError):
                await asyncio.wait_for(waiting, 5)
        assert await pipe("CLIENT", "ID") != first_id  # a new connection
        assert await pipe("ECHO", "again") == b"again"
    finally:
        await pipe.aclose()
        await client.aclose()


async def test_a_reply_later_than_the_socket_timeout_is_a_timeout_error(redis_url, redis_namespace):
    client = create_redis(redis_url, timeout=0.2)
    pipe = RedisPipe(client)
    try:
        first_id = await pipe("CLIENT", "ID")
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await pipe("BLPOP", f"{redis_namespace}:never", 3)  # Redis answers after 3s
        assert time.monotonic() - started < 2
        assert await pipe("CLIENT", "ID") != first_id  # the late connection was dropped
    finally:
        await pipe.aclose()
        await client.aclose()


async def test_an_unreachable_redis_is_a_connection_error():
    dead = create_redis(f"redis://127.0.0.1:{free_port()}/0", timeout=0.5)
    pipe = RedisPipe(dead)
    with pytest.raises(ConnectionError):
        await pipe("PING")
    await dead.aclose()


async def test_the_urls_credentials_are_sent_and_wrong_ones_refused(redis_client, redis_url):
    user, password = f"pipe-test-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    await redis_client.acl_setuser(
        user, enabled=True, passwords=[f"+{password}"], commands=["+@all"], keys=["*"]
    )
    try:
        authed = create_redis(redis_url.replace("redis://", f"redis://{user}:{password}@", 1))
        pipe = RedisPipe(authed)
        assert await pipe("ACL", "WHOAMI") == user.encode()
        await pipe.aclose()
        await authed.aclose()

        refused = create_redis(redis_url.replace("redis://", f"redis://{user}:wrong@", 1))
        with pytest.raises(ConnectionError, match="refused"):
            await RedisPipe(refused)("PING")
        await refused.aclose()
    finally:
        await redis_client.acl_deluser(user)


async def test_commands_go_to_the_urls_database(redis_client, redis_url, redis_namespace):
    other = create_redis(redis_url.rsplit("/", 1)[0] + "/5")
    pipe = RedisPipe(other)
    key = f"{redis_namespace}:db"
    try:
        await pipe("SET", key, "1")
        assert await redis_client.exists(key) == 0
        assert await other.exists(key) == 1
        await pipe.run(Script("return redis.call('DEL', KEYS[1])"), [key])
        assert await other.exists(key) == 0
    finally:
        await other.delete(key)
        await pipe.aclose()
        await other.aclose()


async def test_replies_are_text_when_the_client_decodes_responses(redis_url):
    decoding = Redis.from_url(redis_url, decode_responses=True)
    pipe = RedisPipe(decoding)
    assert await pipe("ECHO", "é") == "é"
    await pipe.aclose()
    await decoding.aclose()


async def test_a_script_unknown_to_redis_is_loaded_and_run_once(
    pipe, redis_client, redis_namespace
):
    key = f"{redis_namespace}:runs"
    script = _unique_script("return redis.call('INCR', KEYS[1])")
    assert await pipe.run(script, [key]) == 1
    await redis_client.script_flush()  # as a restarted Redis: the script is unknown again
    assert await pipe.run(script, [key]) == 2


async def test_concurrent_script_calls_get_their_own_results(pipe):
    script = _unique_script("return tonumber(ARGV[1]) * 2")
    assert await pipe.run(script, [], [0]) == 0  # loads it
    results = await asyncio.gather(*(pipe.run(script, [], [i]) for i in range(50)))
    assert results == [i * 2 for i in range(50)]


async def test_a_failing_script_fails_only_its_own_caller(pipe):
    script = _unique_script("if ARGV[1] == 'bad' then return redis.error_reply('no') end return 1")
    results: list[object] = await asyncio.gather(
        pipe.run(script, [], ["good"]),
        pipe.run(script, [], ["bad"]),
        pipe.run(script, [], ["good"]),
        return_exceptions=True,
    )
    good, bad, also_good = results
    assert (good, also_good) == (1, 1)
    assert isinstance(bad, ResponseError)


# A batch script: each group is one key and one argument; it answers, per group, the
# argument doubled and how many groups its batch had (and counts its calls under the key).
BATCH_SOURCE = """
redis.call('INCR', KEYS[1])
local replies = {}
for i = 1, #ARGV do replies[i] = {tonumber(ARGV[i]) * 2, #ARGV} end
return replies
"""


class HeldReplies:
    """Holds what Redis sends a connection until :meth:`release`."""

    def __init__(self, protocol: _Replies, monkeypatch: pytest.MonkeyPatch) -> None:
        self.held: list[bytes] = []
        self.arrived = asyncio.Event()
        self.receive = protocol.data_received
        self.protocol = protocol
        self.monkeypatch = monkeypatch
        monkeypatch.setattr(protocol, "data_received", self.hold)

    def hold(self, data: bytes) -> None:
        self.held.append(data)
        self.arrived.set()

    async def reply_sent(self) -> None:
        await asyncio.wait_for(self.arrived.wait(), 5)

    def release(self) -> None:
        self.monkeypatch.setattr(self.protocol, "data_received", self.receive)
        for data in self.held:
            self.receive(data)


async def test_batched_calls_of_one_turn_go_out_as_one_script_call(pipe, redis_namespace):
    key = f"{redis_namespace}:batches"
    batched = BatchedScript(pipe, _unique_script(BATCH_SOURCE), keys_per_call=1, args_per_call=1)
    replies = await asyncio.gather(*(batched([key], [i]) for i in range(40)))
    assert replies == [[i * 2, 40] for i in range(40)]
    assert await pipe("GET", key) == b"1"
    assert await batched([key], [7]) == [14, 1]  # alone, at once


async def test_batched_calls_made_while_a_batch_is_in_flight_wait_and_go_together(
    pipe, redis_namespace, monkeypatch
):
    """... and go out as soon as its reply is read, before its callers resume (Redis
    works on them while those write their answers)."""
    key = f"{redis_namespace}:batches"
    batched = BatchedScript(pipe, _unique_script(BATCH_SOURCE), keys_per_call=1, args_per_call=1)
    await batched([key], [0])  # loads the script
    protocol, writes = await connected(pipe, monkeypatch)
    held = HeldReplies(protocol, monkeypatch)
    writes_when_answered: list[int] = []

    async def first_caller() -> object:
        reply = await batched([key], [1])
        writes_when_answered.append(len(writes))
        return reply

    first = asyncio.ensure_future(first_caller())
    await held.reply_sent()
    later = []
    for i in range(2, 12):  # over several turns of the loop
        later.append(asyncio.ensure_future(batched([key], [i])))
        await asyncio.sleep(0)
    assert len(writes) == 1
    held.release()
    assert await asyncio.gather(first, *later) == [[2, 1]] + [[i * 2, 10] for i in range(2, 12)]
    assert len(writes) == 2
    assert writes_when_answered == [2]
    assert await pipe("GET", key) == b"3"


async def test_a_batch_looks_its_loop_up_once(pipe, redis_namespace, monkeypatch):
    """On Python 3.11 every get_running_loop() is a getpid() system call: calls made
    while a batch is in flight, and the pipe's writes, use the loop already known."""
    key = f"{redis_namespace}:batches"
    batched = BatchedScript(pipe, _unique_script(BATCH_SOURCE), keys_per_call=1, args_per_call=1)
    await batched([key], [0])  # loads the script, connects
    looked_up: list[int] = []
    real = asyncio.get_running_loop

    def counting() -> asyncio.AbstractEventLoop:
        looked_up.append(1)
        return real()

    monkeypatch.setattr(asyncio, "get_running_loop", counting)
    replies = await asyncio.gather(*(batched([key], [i]) for i in range(40)))
    assert replies == [[i * 2, 40] for i in range(40)]
    assert len(looked_up) == 1


async def test_a_batch_redis_has_forgotten_the_script_of_is_loaded_and_run_once(
    pipe, redis_client, redis_namespace
):
    key = f"{redis_namespace}:batches"
    batched = BatchedScript(pipe, _unique_script(BATCH_SOURCE), keys_per_call=1, args_per_call=1)
    assert await batched([key], [1]) == [2, 1]
    await redis_client.script_flush()  # as a restarted Redis
    assert await asyncio.gather(*(batched([key], [i]) for i in range(3))) == [
        [0, 3],
        [2, 3],
        [4, 3],
    ]
    assert await pipe("GET", key) == b"2"  # the forgotten script ran once, not twice


async def test_a_batch_with_an_argument_redis_cannot_take_fails_alone(pipe, redis_namespace):
    key = f"{redis_namespace}:batches"
    batched = BatchedScript(pipe, _unique_script(BATCH_SOURCE), keys_per_call=1, args_per_call=1)
    assert await batched([key], [1]) == [2, 1]
    results = await asyncio.gather(
        batched([key], [object()]), batched([key], [2]), return_exceptions=True
    )
    assert all(isinstance(result, Exception) for result in results)
    assert await batched([key], [3]) == [6, 1]
    assert await pipe("GET", key) == b"2"


async def test_submit_writes_at_once_and_gives_error_replies_as_values(pipe, monkeypatch):
    assert pipe.submit("PING") is None  # not connected yet: the coroutine connects
    protocol, writes = await connected(pipe, monkeypatch)
    reply = pipe.submit("ECHO", "now")
    assert reply is not None
    assert len(writes) == 1  # written before this coroutine yields
    assert await reply == b"now"
    error = pipe.submit("NO-SUCH-COMMAND")
    assert error is not None
    assert isinstance(await error, hiredis.ReplyError)
    protocol.fail(ConnectionError("gone"))
    assert pipe.submit("PING") is None  # the coroutine reconnects
    assert await pipe("PING") == b"PONG"


async def test_a_batch_holds_at_most_max_calls(pipe, redis_namespace):
    key = f"{redis_namespace}:batches"
    batched = BatchedScript(
        pipe, _unique_script(BATCH_SOURCE), keys_per_call=1, args_per_call=1, max_calls=8
    )
    replies = await asyncio.gather(*(batched([key], [i]) for i in range(20)))
    assert [value for value, _ in replies] == [i * 2 for i in range(20)]
    assert [size for _, size in replies] == [8] * 16 + [4] * 4
    assert await pipe("GET", key) == b"3"


HEAD_SOURCE = """
-- KEYS[1] and ARGV[1] open every batch; then one key and one argument a call.
local replies = {}
for i = 2, #KEYS do
  replies[#replies + 1] = {KEYS[1] .. '|' .. ARGV[1] .. '|' .. KEYS[i] .. '|' .. ARGV[i],
    #KEYS - 1}
end
return replies
"""


async def test_every_batch_starts_with_the_head_once(pipe):
    """Also when a batch is split at ``max_calls``."""
    batched = BatchedScript(
        pipe,
        _unique_script(HEAD_SOURCE),
        keys_per_call=1,
        args_per_call=1,
        head_keys=["h"],
        head_args=[9],
        max_calls=8,
    )
    replies = await asyncio.gather(*(batched([f"k{i}"], [i]) for i in range(20)))
    assert [text for text, _ in replies] == [f"h|9|k{i}|{i}".encode() for i in range(20)]
    assert [size for _, size in replies] == [8] * 16 + [4] * 4
    assert await batched(["alone"], ["x"]) == [b"h|9|alone|x", 1]


async def test_replies_come_as_convert_makes_them_and_one_it_refuses_fails_alone(pipe):
    batched = BatchedScript(
        pipe,
        _unique_script("local r = {} for i = 1, #ARGV do r[i] = tonumber(ARGV[i]) end return r"),
        keys_per_call=0,
        args_per_call=1,
        convert={1: "one", 2: "two"}.__getitem__,
    )
    calls = [batched([], [n]) for n in (1, 2, 3, 1)]
    done = await asyncio.gather(*calls, return_exceptions=True)
    assert [done[0], done[1], done[3]] == ["one", "two", "one"]
    assert isinstance(done[2], RedisError)
    assert "unexpected reply 3" in str(done[2])


async def test_a_failing_batch_fails_its_own_calls_only(pipe, redis_namespace):
    key = f"{redis_namespace}:batches"
    script = _unique_script(
        "for i = 1, #ARGV do if ARGV[i] == 'bad' then return redis.error_reply('no') end end\n"
        + BATCH_SOURCE
    )
    batched = BatchedScript(pipe, script, keys_per_call=1, args_per_call=1)
    results = await asyncio.gather(
        batched([key], [1]), batched([key], ["bad"]), return_exceptions=True
    )
    assert all(isinstance(result, ResponseError) for result in results)
    assert await pipe("GET", key) is None  # atomic: nothing of the batch took effect
    assert list(await asyncio.gather(batched([key], [1]), batched([key], [2]))) == [
        [2, 2],
        [4, 2],
    ]


async def test_a_batch_answered_with_the_wrong_number_of_replies_is_an_error(pipe):
    batched = BatchedScript(pipe, _unique_script("return {1}"), keys_per_call=0, args_per_call=1)
    results = await asyncio.gather(batched([], [1]), batched([], [2]), return_exceptions=True)
    assert all(isinstance(result, RedisError) for result in results)


async def test_a_batched_call_with_groups_of_the_wrong_width_is_refused(pipe):
    batched = BatchedScript(pipe, _unique_script("return {}"), keys_per_call=2, args_per_call=1)
    with pytest.raises(ValueError, match="2 keys and 1 arguments"):
        await batched(["only one key"], [1])


async def test_a_lost_connection_fails_the_batch_and_the_next_one_reconnects(
    redis_url, redis_client, redis_namespace
):
    pipe = RedisPipe(create_redis(redis_url))
    key = f"{redis_namespace}:batches"
    batched = BatchedScript(pipe, _unique_script(BATCH_SOURCE), keys_per_call=1, args_per_call=1)
    try:
        await batched([key], [0])
        protocol = pipe._protocol
        assert protocol is not None
        pending = [asyncio.ensure_future(batched([key], [i])) for i in range(3)]
        for _ in range(100):  # until the batch is written and its reply awaited
            if protocol.waiting:
                break
            await asyncio.sleep(0)
        protocol.fail(ConnectionError("gone"))
        results = await asyncio.gather(*pending, return_exceptions=True)
        assert all(isinstance(result, ConnectionError) for result in results)
        assert await batched([key], [5]) == [10, 1]
    finally:
        await pipe.aclose()


class _OtherConnection(Connection):
    """A connection class the pipe does not know (as TLS or a custom transport)."""


@pytest.mark.parametrize("switched_off", [False, True])
async def test_connections_it_does_not_speak_go_through_redis_py_with_the_same_replies(
    redis_url, redis_namespace, monkeypatch, switched_off
):
    if switched_off:  # any connection, with the shortcut off (--no-redis-pipe)
        monkeypatch.setattr(redis_pipe, "DIRECT", False)
        pool = ConnectionPool.from_url(redis_url)
    else:
        pool = ConnectionPool.from_url(redis_url, connection_class=_OtherConnection)
    client = Redis(connection_pool=pool)
    pipe = RedisPipe(client)
    key = f"{redis_namespace}:fallback"
    try:
        assert not pipe.direct
        assert await pipe("SET", key, "1", "EX", 60) == b"OK"  # not redis-py's True
        assert await pipe("MGET", key, f"{redis_namespace}:missing") == [b"1", None]
        with pytest.raises(ResponseError):
            await pipe("HGET", key, "field")  # WRONGTYPE
        script = _unique_script("return redis.call('INCR', KEYS[1])")
        assert await pipe.run(script, [key]) == 2  # through NOSCRIPT and SCRIPT LOAD
        assert pipe._protocol is None  # never opened a connection of its own
    finally:
        await client.delete(key)
        await pipe.aclose()
        await client.aclose()
        await pool.aclose()


async def test_every_user_of_a_client_shares_its_pipe_until_it_is_closed(redis_client):
    pipe = pipe_of(redis_client)
    assert pipe_of(redis_client) is pipe
    assert await pipe("PING") == b"PONG"
    protocol = pipe._protocol
    assert protocol is not None

    await close_pipe_of(redis_client)

    assert protocol.closed.done()
    assert pipe_of(redis_client) is not pipe
    await close_pipe_of(redis_client)


async def test_a_tracking_pipe_is_told_of_changes_under_its_prefixes(
    redis_client: Redis, redis_namespace: str
) -> None:
    told: list[list[str] | None] = []
    prefix = f"{redis_namespace}:watched:"
    pipe = RedisPipe(redis_client, tracking=[prefix], on_invalidate=told.append)
    try:
        assert await pipe("GET", f"{prefix}a") is None  # connects, tracking on
        assert pipe.tracking
        await redis_client.set(f"{redis_namespace}:elsewhere", b"1")
        await redis_client.set(f"{prefix}a", b"1")
        await redis_client.delete(f"{prefix}a")
        # Replies still come in order, the changes told apart from them.
        assert await pipe("MGET", f"{prefix}a", f"{prefix}b") == [None, None]
        own_id = await pipe("CLIENT", "ID")
        await redis_client.client_kill_filter(_id=own_id)
        while pipe.tracking:  # noqa: ASYNC110  (the loss reaches the pipe's protocol)
            await asyncio.sleep(0.01)
    finally:
        await pipe.aclose()
    assert told == [[f"{prefix}a"], [f"{prefix}a"], None]  # None: the connection was lost


async def test_pipes_without_tracking_speak_resp2_and_hear_of_no_changes(
    pipe: RedisPipe, redis_client: Redis, redis_namespace: str
) -> None:
    assert await pipe("HGETALL", f"{redis_namespace}:none") == []  # RESP2's shape, not {}
    assert not pipe.tracking


def test_tracking_needs_someone_to_tell(redis_client: Redis) -> None:
    with pytest.raises(ValueError, match="on_invalidate"):
        RedisPipe(redis_client, tracking=["x:"])
