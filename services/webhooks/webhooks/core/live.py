"""What the intake keeps in Redis: each webhook's live version, its stats, the recent
delivery ids, and (through :data:`RECORD`) the queued events.

A delivery costs one script call: it checks that the webhook the intake cached in
process is still current (its version), counts the outcome, absorbs a replayed delivery
id and enqueues the event, all atomically. Stats are plain Redis counters, so concurrent
deliveries never wait on a database lock and never lose an increment.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, cast

import hiredis
from arq.constants import job_key_prefix
from redis.asyncio import Redis
from redis.asyncio.connection import Connection, UnixDomainSocketConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from shared.redis import Keys

# A version whose key is gone is re-read from the database, so a lost update here costs
# one database read; the TTL bounds how long a version written by a racing reader can
# outlive a change whose own write failed.
VERSION_TTL_MS = 300_000

PUBLISH = """
local current = redis.call('GET', KEYS[1])
if (not current) or tonumber(current) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return redis.call('GET', KEYS[1])
"""

RECORD = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local outcome = ARGV[2]
if outcome == 'none' then return 0 end
local now = tonumber(ARGV[3])
local function later(field)
  local current = redis.call('HGET', KEYS[2], field)
  return (not current) or tonumber(current) <= now
end
redis.call('HINCRBY', KEYS[2], 'received_count', 1)
local received_later = later('last_received_at')
if outcome == 'accepted' then
  redis.call('HINCRBY', KEYS[2], 'accepted_count', 1)
  -- Every accepted delivery was also received, so a time past the last receipt is past
  -- the last acceptance too: one HSET for both (the common case).
  if received_later then
    redis.call('HSET', KEYS[2], 'last_received_at', ARGV[3], 'last_accepted_at', ARGV[3])
  elseif later('last_accepted_at') then
    redis.call('HSET', KEYS[2], 'last_accepted_at', ARGV[3])
  end
  if ARGV[6] ~= '' then
    if not redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[5]) then return 2 end
    redis.call('PSETEX', KEYS[4], ARGV[7], ARGV[6])
    redis.call('ZADD', KEYS[5], ARGV[8], ARGV[9])
  end
  return 1
end
if received_later then redis.call('HSET', KEYS[2], 'last_received_at', ARGV[3]) end
redis.call('HINCRBY', KEYS[2], outcome .. '_count', 1)
if ARGV[4] ~= '' and later('last_error_at') then
  redis.call('HSET', KEYS[2], 'last_error_at', ARGV[3], 'last_error_summary', ARGV[4])
end
return 1
"""


class Outcome(IntEnum):
    STALE = -1  # the cached webhook changed: reload it and decide again
    NOTHING = 0
    RECORDED = 1
    DUPLICATE = 2  # a replayed delivery id: counted, not enqueued again


@dataclass(frozen=True)
class QueuedJob:
    """An arq job, serialized, ready to be written by :data:`RECORD`."""

    job_id: str
    data: bytes
    queue: str
    score_ms: int
    expires_ms: int


def _pack(*parts: Any) -> bytes:
    """One command in Redis's wire format (hiredis's packer, in C)."""
    packed: bytes = hiredis.pack_command(parts)
    return packed


class _Replies(asyncio.Protocol):
    """One Redis connection: replies are parsed as they arrive (hiredis) and handed, in
    order, to the futures of the commands written before them; ``on_idle`` is called when
    no reply is awaited any more."""

    def __init__(self, on_idle: Callable[[], None]) -> None:
        self.on_idle = on_idle
        self.reader = hiredis.Reader()
        self.waiting: deque[tuple[asyncio.Future[Any], float]] = deque()  # (caller, sent at)
        self.transport: asyncio.Transport | None = None
        self.lost: RedisError | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's are not asyncio.Transport subclasses).
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        try:
            while (reply := self.reader.gets()) is not False:
                future = self.waiting.popleft()[0]
                if not future.done():  # a caller that was cancelled still had its slot
                    future.set_result(reply)
        except (hiredis.ProtocolError, IndexError) as exc:  # garbage, or a reply nobody asked
            self.fail(RedisConnectionError(f"Redis sent an unexpected reply: {exc!r}"))
            return
        if not self.waiting:
            self.on_idle()

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(RedisConnectionError(f"Connection to Redis lost ({exc!r})"))
        if not self.closed.done():
            self.closed.set_result(None)

    def send(self, data: bytes, futures: Iterable[asyncio.Future[Any]], now: float) -> None:
        """Write ``data`` (one command or several) whose replies go to ``futures``, in order."""
        assert self.transport is not None
        self.transport.write(data)
        self.waiting.extend((future, now) for future in futures)

    def fail(self, error: RedisError) -> None:
        """Every caller still waiting learns ``error``; the connection is dropped."""
        if self.lost is None:
            self.lost = error
        while self.waiting:
            future = self.waiting.popleft()[0]
            if not future.done():
                future.set_exception(self.lost)
        if self.transport is not None:
            self.transport.abort()
        self.on_idle()  # what was queued meanwhile learns the error too


class ScriptPipe:
    """Runs one Lua script (``EVALSHA``) for many concurrent callers over a connection of
    its own, pipelined: calls go out together in one write, and each caller gets its own
    reply (or error) as soon as it arrives. While a write's replies are awaited, new calls
    wait for them and then go out together (as a database groups commits): alone, a call is
    written at once; under load, each write carries many, and the writes (system calls,
    which cost this process and Redis more than the scripts) grow fewer.

    The intake calls it once per delivery, so it skips what redis-py's client costs per
    command (a pipeline object, the pool, a task per timed write, a coroutine per reply):
    hiredis packs the commands and parses the replies. It connects like ``redis`` (host
    and port or Unix socket, username, password, database, timeouts from its pool);
    connections it does not speak (TLS, credential providers) go through ``redis`` itself.
    A lost connection fails the calls waiting on it (``ConnectionError``, a ``RedisError``)
    and the next call connects again; a reply later than the pool's ``socket_timeout``
    drops the connection (``TimeoutError``).
    """

    def __init__(self, redis: Redis, script: str) -> None:
        self.redis = redis
        self.script = script
        self.sha = hashlib.sha1(script.encode()).hexdigest()  # noqa: S324  (Redis's script id)
        pool = redis.connection_pool
        self._options: dict[str, Any] = dict(pool.connection_kwargs)
        self._direct = (
            pool.connection_class in (Connection, UnixDomainSocketConnection)
            and self._options.get("credential_provider") is None
        )
        self._timeout: float = self._options.get("socket_timeout") or 5.0
        self._connect_timeout: float = self._options.get("socket_connect_timeout") or 5.0
        self._protocol: _Replies | None = None
        self._connecting = asyncio.Lock()
        self._queued: list[tuple[bytes, asyncio.Future[Any]]] = []
        self._scheduled = False
        self._watching = False

    async def __call__(self, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        if not self._direct:
            return await self._through_redis(keys, args)
        command = _pack("EVALSHA", self.sha, len(keys), *keys, *args)
        reply = await self._call(command)
        if isinstance(reply, hiredis.ReplyError) and str(reply).startswith("NOSCRIPT"):
            # Redis restarted (or its scripts were flushed): a script refused as unknown
            # did not run, so load it and send again.
            await self._call(_pack("SCRIPT", "LOAD", self.script))
            reply = await self._call(command)
        if isinstance(reply, hiredis.ReplyError):
            raise ResponseError(str(reply))
        return reply

    async def aclose(self) -> None:
        protocol, self._protocol = self._protocol, None
        if protocol is not None:
            protocol.fail(RedisConnectionError("Connection to Redis closed"))
            await protocol.closed

    async def _through_redis(self, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        try:
            return await self.redis.evalsha(self.sha, len(keys), *keys, *args)  # type: ignore[misc]
        except NoScriptError:
            await self.redis.script_load(self.script)
            return await self.redis.evalsha(self.sha, len(keys), *keys, *args)  # type: ignore[misc]

    async def _call(self, command: bytes) -> Any:
        protocol = self._protocol
        if protocol is None or protocol.lost is not None:
            protocol = await self._connect()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queued.append((command, future))
        if not protocol.waiting:
            self._schedule()
        return await future

    def _schedule(self) -> None:
        """Flush at the end of this turn of the loop (once), when calls are queued."""
        if self._queued and not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Writes every queued command in one write."""
        self._scheduled = False
        queued, self._queued = self._queued, []
        protocol = self._protocol
        if protocol is None or protocol.lost is not None:
            error = protocol.lost if protocol else None
            for _, future in queued:
                if not future.done():
                    future.set_exception(error or RedisConnectionError("Not connected to Redis"))
            return
        loop = asyncio.get_running_loop()
        try:
            protocol.send(
                b"".join(command for command, _ in queued), [f for _, f in queued], loop.time()
            )
        except Exception as exc:  # the transport closed before telling the protocol
            error = RedisConnectionError(f"Cannot write to Redis: {exc!r}")
            for _, future in queued:
                if not future.done():
                    future.set_exception(error)
            protocol.fail(error)
            return
        if not self._watching:
            self._watching = True
            loop.call_later(self._timeout, self._watch)

    def _watch(self) -> None:
        """While replies are awaited: drop the connection if the oldest is overdue."""
        self._watching = False
        protocol = self._protocol
        if protocol is None or protocol.lost is not None or not protocol.waiting:
            return
        loop = asyncio.get_running_loop()
        overdue = loop.time() - protocol.waiting[0][1] - self._timeout
        if overdue >= 0:
            protocol.fail(RedisTimeoutError(f"Redis did not answer within {self._timeout:g}s"))
            return
        self._watching = True
        loop.call_later(-overdue, self._watch)

    async def _connect(self) -> _Replies:
        async with self._connecting:
            if self._protocol is not None and self._protocol.lost is None:
                return self._protocol  # another caller connected meanwhile
            protocol: _Replies | None = None
            try:
                async with asyncio.timeout(self._connect_timeout):
                    protocol = await self._open()
                    await self._hello(protocol)
            except (OSError, TimeoutError, RedisError) as exc:
                if protocol is not None:
                    protocol.fail(RedisConnectionError("Connection to Redis abandoned"))
                    await protocol.closed
                if isinstance(exc, RedisError):
                    raise
                raise RedisConnectionError(f"Error connecting to Redis: {exc!r}") from exc
            self._protocol = protocol
            return protocol

    def _protocol_factory(self) -> _Replies:
        return _Replies(on_idle=self._schedule)

    async def _open(self) -> _Replies:
        options = self._options
        loop = asyncio.get_running_loop()
        if "path" in options:
            _, protocol = await loop.create_unix_connection(self._protocol_factory, options["path"])
        else:
            host, port = options.get("host", "localhost"), options.get("port", 6379)
            _, protocol = await loop.create_connection(self._protocol_factory, host, port)
        return protocol

    async def _hello(self, protocol: _Replies) -> None:
        """What redis-py sends on a new connection that matters here: credentials, database."""
        options = self._options
        hello: list[tuple[Any, ...]] = []
        if options.get("password"):
            user = (options["username"],) if options.get("username") else ()
            hello.append(("AUTH", *user, options["password"]))
        if options.get("db"):
            hello.append(("SELECT", options["db"]))
        loop = asyncio.get_running_loop()
        for command in hello:
            future: asyncio.Future[Any] = loop.create_future()
            protocol.send(_pack(*command), [future], loop.time())
            reply = await future
            if isinstance(reply, hiredis.ReplyError):
                raise RedisConnectionError(f"Redis refused the connection: {reply}")


class LiveState:
    def __init__(self, redis: Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys
        self._publish = redis.register_script(PUBLISH)
        self._record = ScriptPipe(redis, RECORD)
        # Every delivery names its webhook's keys: built once per webhook.
        self._webhook_keys = functools.lru_cache(maxsize=10_000)(self._keys_of)

    def _keys_of(self, webhook_id: uuid.UUID) -> tuple[str, str, str]:
        """The webhook's version and stats keys, and the prefix of its delivery ids' keys."""
        return (
            self.keys("webhooks", "version", webhook_id),
            self.keys("webhooks", "stats", webhook_id),
            self.keys("webhooks", "delivery", webhook_id, ""),
        )

    def _version(self, webhook_id: uuid.UUID) -> str:
        return self._webhook_keys(webhook_id)[0]

    def _stats(self, webhook_id: uuid.UUID) -> str:
        return self._webhook_keys(webhook_id)[1]

    async def aclose(self) -> None:
        await self._record.aclose()

    async def publish(self, webhook_id: uuid.UUID, version: int) -> None:
        """Make ``version`` current (never lowering a newer one)."""
        await self._publish(keys=[self._version(webhook_id)], args=[version, VERSION_TTL_MS])

    async def forget(self, webhook_id: uuid.UUID) -> None:
        """Before a change commits: every intake re-reads the webhook from then on."""
        await self.redis.delete(self._version(webhook_id))

    async def drop(self, webhook_id: uuid.UUID) -> None:
        """After a webhook is deleted: its version and stats go."""
        await self.redis.delete(self._version(webhook_id), self._stats(webhook_id))

    async def stats(self, webhook_ids: Sequence[uuid.UUID]) -> list[dict[bytes, bytes]]:
        async with self.redis.pipeline(transaction=False) as pipe:
            for webhook_id in webhook_ids:
                pipe.hgetall(self._stats(webhook_id))
            results: list[dict[bytes, bytes]] = await pipe.execute()
        return results

    async def record(
        self,
        webhook_id: uuid.UUID,
        version: int,
        outcome: str,
        now_us: int,
        *,
        error: str = "",
        delivery_key: str = "",
        dedupe_ms: int = 0,
        job: QueuedJob | None = None,
    ) -> Outcome:
        """Count one delivery's ``outcome`` (``accepted``, ``auth_failed``,
        ``invalid_payload`` or ``none``) and enqueue ``job``, if the webhook is still at
        ``version``."""
        version_key, stats_key, deliveries = self._webhook_keys(webhook_id)
        if job is not None:
            keys = (
                version_key,
                stats_key,
                deliveries + delivery_key,
                job_key_prefix + job.job_id,
                job.queue,
            )
            args: tuple[str | int | bytes, ...] = (
                version, outcome, now_us, error,
                dedupe_ms, job.data, job.expires_ms, job.score_ms, job.job_id,
            )  # fmt: skip
        else:
            keys = (version_key, stats_key, "", "", "")
            args = (version, outcome, now_us, error, 0, "", 0, 0, "")
        result = await self._record(keys, args)
        return Outcome(int(result))
