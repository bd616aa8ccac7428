"""What the intake keeps in Redis: each webhook's live version, its stats, and (through
:data:`RECORD`) the queued events, whose keys also mark the recent deliveries.

A delivery costs one script call, shared with the deliveries that arrive alongside it: it
checks that the webhook the intake cached in process is still current (its version),
counts the outcome, absorbs a replay and enqueues the event, all atomically.
Stats are plain Redis counters, so concurrent deliveries never wait on a database lock and
never lose an increment.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Sequence
from enum import IntEnum
from typing import Literal, NamedTuple

from arq.constants import job_key_prefix
from redis.asyncio import Redis

from shared.redis import Keys
from shared.redis_batch import BatchedScript
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
-- First what every batch shares: KEYS[1] the queue; ARGV[1] a job's expiry (ms), ARGV[2]
-- the prefix of job keys. Then the deliveries in order, three keys and five arguments each:
--   KEYS  version, stats, job (its id, the key after the prefix, names the delivery)
--   ARGV  version, outcome, now (µs, as text; the job's score is its ms), error, job data
-- Each answers as if run alone, in order: -1 stale, 0 nothing, 1 recorded, 2 duplicate.
-- The job key is the replay marker: a job id is the hash of webhook and the delivery's key
-- (what its signature covers: a signed delivery id or the body; see the intake), so a
-- replay finds the key while its event waits or runs, and after that the worker's
-- tombstone, kept for the replay window (webhooks.event.batch_worker).
-- The stats of all of them are written once per webhook at the end (one HMGET, one
-- HSET), so a batch costs a few commands per webhook, one per enqueued event and one
-- ZADD. A webhook's tallies are plain fields, the latest times (µs, and their text) too:
-- no table made per delivery.
local queue_key, expiry_ms, id_from = KEYS[1], ARGV[1], #ARGV[2] + 1
local results, versions, stats, touched, queued = {}, {}, {}, {}, {}
for i = 1, (#KEYS - 1) / 3 do
  local k, a = 1 + (i - 1) * 3, 2 + (i - 1) * 5
  local version_key = KEYS[k + 1]
  local version = versions[version_key]
  if version == nil then
    version = redis.call('GET', version_key)
    versions[version_key] = version
  end
  local outcome = ARGV[a + 2]
  if version ~= ARGV[a + 1] then
    results[i] = -1
  elseif outcome == 'none' then
    results[i] = 0
  else
    local key = KEYS[k + 2]
    local s = stats[key]
    if s == nil then
      s = {received = 0, accepted = 0, auth_failed = 0, invalid_payload = 0}
      stats[key] = s
      touched[#touched + 1] = key
    end
    local text = ARGV[a + 3]
    local now = tonumber(text)
    s.received = s.received + 1
    -- The later time wins; ties go to the later delivery.
    if s.received_at == nil or now >= s.received_at then
      s.received_at, s.received_text = now, text
    end
    results[i] = 1
    if outcome == 'accepted' then
      s.accepted = s.accepted + 1
      if s.accepted_at == nil or now >= s.accepted_at then
        s.accepted_at, s.accepted_text = now, text
      end
      local data = ARGV[a + 5]
      if data ~= '' then
        local job_key = KEYS[k + 3]
        if redis.call('SET', job_key, data, 'NX', 'PX', expiry_ms) then
          queued[#queued + 1] = math.floor(now / 1000)
          queued[#queued + 1] = string.sub(job_key, id_from)
        else
          results[i] = 2
        end
      end
    else
      s[outcome] = s[outcome] + 1
      local summary = ARGV[a + 4]
      if summary ~= '' and (s.error_at == nil or now >= s.error_at) then
        s.error_at, s.error_text, s.error_summary = now, text, summary
      end
    end
  end
end
for _, key in ipairs(touched) do
  local s = stats[key]
  -- One read and one write per webhook: the counts are added here (the script is atomic),
  -- and timestamps only move forward, whatever order deliveries land in.
  local stored = redis.call('HMGET', key, 'last_received_at', 'last_accepted_at',
    'last_error_at', 'received_count', 'accepted_count', 'auth_failed_count',
    'invalid_payload_count')
  local updates = {'received_count', (tonumber(stored[4]) or 0) + s.received}
  local function add(count, index, field)
    if count > 0 then
      updates[#updates + 1] = field
      updates[#updates + 1] = (tonumber(stored[index]) or 0) + count
    end
  end
  add(s.accepted, 5, 'accepted_count')
  add(s.auth_failed, 6, 'auth_failed_count')
  add(s.invalid_payload, 7, 'invalid_payload_count')
  local function advance(at, text, index, field)
    if at ~= nil and ((not stored[index]) or tonumber(stored[index]) <= at) then
      updates[#updates + 1] = field
      updates[#updates + 1] = text
      return true
    end
    return false
  end
  advance(s.received_at, s.received_text, 1, 'last_received_at')
  advance(s.accepted_at, s.accepted_text, 2, 'last_accepted_at')
  if advance(s.error_at, s.error_text, 3, 'last_error_at') then
    updates[#updates + 1] = 'last_error_summary'
    updates[#updates + 1] = s.error_summary
  end
  redis.call('HSET', key, unpack(updates))
end
if #queued > 0 then redis.call('ZADD', queue_key, unpack(queued)) end
return results
""")


# What a delivery is counted as (RECORD knows these and no other).
Counted = Literal["accepted", "auth_failed", "invalid_payload", "none"]


class Outcome(IntEnum):
    STALE = -1  # the cached webhook changed: reload it and decide again
    NOTHING = 0
    RECORDED = 1
    DUPLICATE = 2  # a replay (the same key): counted, not enqueued again


_OUTCOMES = {outcome.value: outcome for outcome in Outcome}  # no EnumType.__call__ per reply


class QueuedJob(NamedTuple):
    """An arq job, serialized, ready to be written by :data:`RECORD` (its score in the
    queue is the delivery's time)."""

    job_id: str
    data: bytes


class LiveState:
    """``queue``: where accepted events are queued (as arq jobs expiring after
    ``expires_ms``). A delivery whose job is still queued or running, or finished less than
    the replay window ago (the worker's tombstone), is a replay."""

    def __init__(self, redis: Redis, keys: Keys, *, queue: str, expires_ms: int) -> None:
        self.redis = redis
        self.keys = keys
        self._publish = redis.register_script(PUBLISH)
        # Its own connection, pipelined: the intake runs RECORD for every delivery, and
        # the deliveries that arrive while one batch is in Redis go together in the next.
        self._pipe = RedisPipe(redis)
        self._record = BatchedScript(
            self._pipe,
            RECORD,
            keys_per_call=3,
            args_per_call=5,
            head_keys=(queue,),
            head_args=(expires_ms, job_key_prefix),
            convert=_OUTCOMES.__getitem__,
        )
        # Every delivery names its webhook's keys: built once per webhook.
        self._webhook_keys = functools.lru_cache(maxsize=10_000)(self._keys_of)

    def _keys_of(self, webhook_id: uuid.UUID) -> tuple[str, str]:
        """The webhook's version and stats keys."""
        return (
            self.keys("webhooks", "version", webhook_id),
            self.keys("webhooks", "stats", webhook_id),
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

    def record(
        self,
        webhook_id: uuid.UUID,
        version: int,
        outcome: Counted,
        now_us: int,
        *,
        error: str = "",
        job: QueuedJob | None = None,
    ) -> asyncio.Future[Outcome]:
        """Count one delivery's ``outcome`` (``accepted``, ``auth_failed``,
        ``invalid_payload`` or ``none``) and enqueue ``job`` unless a job of its id is
        queued, running or finished within the replay window (:attr:`Outcome.DUPLICATE`),
        if the webhook is still at ``version``. (A future to await, not a coroutine: one
        frame less for every delivery.)"""
        version_key, stats_key = self._webhook_keys(webhook_id)
        if job is not None:
            keys = (version_key, stats_key, job_key_prefix + job.job_id)
            args: tuple[str | int | bytes, ...] = (version, outcome, now_us, error, job.data)
        else:
            keys = (version_key, stats_key, "")
            args = (version, outcome, now_us, error, "")
        return self._record(keys, args)
