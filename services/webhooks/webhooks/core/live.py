"""What the intake keeps in Redis: each webhook's live version, its stats, the recent
delivery ids, and (through :data:`RECORD`) the queued events.

A delivery costs one script call: it checks that the webhook the intake cached in
process is still current (its version), counts the outcome, absorbs a replayed delivery
id and enqueues the event, all atomically. Stats are plain Redis counters, so concurrent
deliveries never wait on a database lock and never lose an increment.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from arq.constants import job_key_prefix
from redis.asyncio import Redis

from shared.redis import Keys
from shared.redis_pipe import RedisPipe, Script

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

RECORD = Script("""
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
""")


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


class LiveState:
    def __init__(self, redis: Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys
        self._publish = redis.register_script(PUBLISH)
        # Its own connection, pipelined: the intake runs RECORD once per delivery.
        self._pipe = RedisPipe(redis)
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
        await self._pipe.aclose()

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
        result = await self._pipe.run(RECORD, keys, args)
        return Outcome(int(result))
