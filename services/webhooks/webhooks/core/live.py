"""What the intake keeps in Redis: each webhook's live version, its stats, the recent
delivery ids, and (through :data:`RECORD`) the queued events.

A delivery costs one script call: it checks that the webhook the intake cached in
process is still current (its version), counts the outcome, absorbs a replayed delivery
id and enqueues the event, all atomically. Stats are plain Redis counters, so concurrent
deliveries never wait on a database lock and never lose an increment.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from arq.constants import job_key_prefix
from redis.asyncio import Redis
from redis.exceptions import NoScriptError

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
if later('last_received_at') then redis.call('HSET', KEYS[2], 'last_received_at', ARGV[3]) end
if outcome == 'accepted' then
  redis.call('HINCRBY', KEYS[2], 'accepted_count', 1)
  if later('last_accepted_at') then redis.call('HSET', KEYS[2], 'last_accepted_at', ARGV[3]) end
  if ARGV[6] ~= '' then
    if not redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[5]) then return 2 end
    redis.call('PSETEX', KEYS[4], ARGV[7], ARGV[6])
    redis.call('ZADD', KEYS[5], ARGV[8], ARGV[9])
  end
  return 1
end
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


class ScriptBatcher:
    """Runs one Lua script for many concurrent callers, one pipeline per round trip.

    While a pipeline is in flight, new calls wait for the next one (as a database groups
    commits), so under load each round trip carries many deliveries and the per-call cost
    of the Redis client shrinks; alone, a call goes out at once. Every caller still gets
    its own script's result (or error) before it answers its sender.
    """

    def __init__(self, redis: Redis, script: str) -> None:
        self.redis = redis
        self.script = script
        self.sha = hashlib.sha1(script.encode()).hexdigest()  # noqa: S324  (Redis's script id)
        self._pending: list[tuple[Sequence[Any], Sequence[Any], asyncio.Future[Any]]] = []
        self._flushing = False

    async def __call__(self, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((keys, args, future))
        if not self._flushing:
            self._flushing = True
            asyncio.get_running_loop().create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    results = await self._send(batch)
                except BaseException as exc:  # every caller of this batch learns why
                    for _, _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    if not isinstance(exc, Exception):
                        raise
                    continue
                for (_, _, future), result in zip(batch, results, strict=True):
                    if future.done():
                        continue
                    if isinstance(result, Exception):
                        future.set_exception(result)
                    else:
                        future.set_result(result)
        finally:
            self._flushing = False

    async def _send(self, batch: Sequence[tuple[Sequence[Any], Sequence[Any], Any]]) -> list[Any]:
        for attempt in (1, 2):
            async with self.redis.pipeline(transaction=False) as pipe:
                for keys, args, _ in batch:
                    pipe.evalsha(self.sha, len(keys), *keys, *args)
                results: list[Any] = await pipe.execute(raise_on_error=False)
            if attempt == 1 and any(isinstance(r, NoScriptError) for r in results):
                # Redis restarted (or its scripts were flushed): load it and send again;
                # a script refused as unknown did not run.
                await self.redis.script_load(self.script)
                continue
            return results
        raise AssertionError("unreachable")  # pragma: no cover


class LiveState:
    def __init__(self, redis: Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys
        self._publish = redis.register_script(PUBLISH)
        self._record = ScriptBatcher(redis, RECORD)

    def _version(self, webhook_id: uuid.UUID) -> str:
        return self.keys("webhooks", "version", webhook_id)

    def _stats(self, webhook_id: uuid.UUID) -> str:
        return self.keys("webhooks", "stats", webhook_id)

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
        keys = [self._version(webhook_id), self._stats(webhook_id)]
        args: list[str | int | bytes] = [version, outcome, now_us, error]
        if job is not None:
            keys += [self.keys("webhooks", "delivery", webhook_id, delivery_key)]
            keys += [job_key_prefix + job.job_id, job.queue]
            args += [dedupe_ms, job.data, job.expires_ms, job.score_ms, job.job_id]
        else:
            keys += ["", "", ""]
            args += [0, "", 0, 0, ""]
        result = await self._record(keys, args)
        return Outcome(int(result))
