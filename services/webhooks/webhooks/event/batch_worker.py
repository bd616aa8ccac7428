"""arq's worker, claiming due jobs in batches: what lets one process drain a backlog of
cheap events (most match no trigger) thousands a second rather than hundreds.

Stock arq starts each job with four sequential round trips (WATCH the in-progress key,
EXISTS, ZSCORE, MULTI/PSETEX/EXEC), takes at most ``max_jobs`` ids per poll and sleeps up
to ``poll_delay`` between polls even while a backlog waits; each job then runs two
transactions of its own through redis-py (read the job and count the try; finish it). For
a job that costs a millisecond, that is nearly everything the worker does.
:class:`BatchWorker` changes only how jobs are claimed and how arq's transactions reach
Redis:

- :data:`CLAIM`, one script, claims as many due jobs as there are free slots, by arq's
  rule: a job is due when its score (in the queue's sorted set) is not in the future, and
  free when its in-progress key is absent; claiming sets that key with the lease
  (``in_progress_timeout_s``), as arq does. The script is atomic, so workers side by side
  never claim one job twice (arq needs WATCH for that);
- while a claim fills every free slot, the next one follows as soon as half the slots
  are free again, without sleeping ``poll_delay`` (bounded by it, so the heartbeat and
  abort checks keep their pace);
- arq's transactions (``pipeline(transaction=True)`` without WATCH) run as one script
  each (:data:`TRANSACTION`; a script is atomic, as MULTI/EXEC is) over a pipelined
  connection of their own (:class:`shared.redis_pipe.RedisPipe`), so the transactions of
  every running job go out together and hiredis packs and parses them;
- with a ``replay_window_ms``, a finished job's key is emptied for that long instead of
  deleted (see :class:`BatchWorker`): the intake's replay marker;
- arq's own timer on a try is off: arq fails a job for good when that timer fires, which
  drops an accepted event. A job keeps its own time instead (a budget under the job
  timeout, :func:`webhooks.event.tasks.process_event`), and a try past it is retried. Both
  timers together raced: a try cut off at its budget that took longer to unwind than the
  gap between the two (a cancelled request or transaction cleaning up on a CPU-starved
  worker) was cancelled again by arq's, and failed. ``job_timeout`` still sizes the lease.

Everything else is arq's: the keys and values, running a job (but for its timer), retries
and ``Retry(defer=…)``, expiry (``_expires``), results, heartbeat and health check, signals,
aborts. A job enqueued by the intake's script or by ``ArqRedis.enqueue_job`` runs alike.

A shortcut through arq's and redis-py's private parts (a worker's poll loop and slot
bookkeeping, a pipeline's command stack), measured and listed in ``docs/performance.md``:
``batch_claims=False`` (the worker's ``--arq-claims``) claims jobs as arq does, and
``--no-redis-pipe`` sends the transactions through redis-py.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from typing import Any, cast

import hiredis
from arq.connections import ArqRedis, create_pool
from arq.constants import (
    abort_jobs_ss,
    in_progress_key_prefix,
    job_key_prefix,
    result_key_prefix,
    retry_key_prefix,
)
from arq.utils import timestamp_ms, to_ms
from arq.worker import Worker
from redis._parsers import BaseParser
from redis.asyncio.client import Pipeline
from redis.client import EMPTY_RESPONSE
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from shared.redis_pipe import RedisPipe, Script

logger = logging.getLogger(__name__)
_UNREACHABLE = (RedisConnectionError, RedisTimeoutError)
_MAX_REDIS_WAIT = 5.0  # seconds between tries while Redis is out of reach

CLAIM = Script("""
local wanted, page = tonumber(ARGV[2]), tonumber(ARGV[4])
local claimed = {}
local offset = 0
repeat
  local due = redis.call(
    'ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', offset, page)
  for i = 1, #due, 2 do
    local in_progress = ARGV[5] .. due[i]
    if redis.call('EXISTS', in_progress) == 0 then
      redis.call('PSETEX', in_progress, ARGV[3], '1')
      claimed[#claimed + 1] = due[i]
      claimed[#claimed + 1] = due[i + 1]
      if #claimed == 2 * wanted then return claimed end
    end
  end
  offset = offset + page
until #due < 2 * page
return claimed
""")
"""KEYS: the queue. ARGV: now (ms), how many jobs at most, the lease (ms), how many ids to
read at a time, the in-progress key prefix. Returns the claimed ids, each followed by its
score. Running jobs stay queued until they finish, so the oldest due ids are often the
worker's own running jobs or other workers' (at most every worker's slots): the script
reads on past them, however many workers there are."""

TRANSACTION = Script("""
local replies = {}
local i = 1
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  replies[#replies + 1] = redis.pcall(unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return replies
""")
"""ARGV: each command's number of words, then its words. Returns each command's reply
(an error reply in its place, the others still run: as EXEC answers)."""


class PipedTransaction(Pipeline):
    """A redis-py transaction sent as one :data:`TRANSACTION` call over ``lane``; with
    WATCH, explicit MULTI or without a transaction, redis-py's own."""

    def __init__(
        self,
        connection_pool: Any,
        response_callbacks: Any,
        transaction: bool,
        shard_hint: str | None,
        *,
        lane: RedisPipe,
    ) -> None:
        super().__init__(connection_pool, response_callbacks, transaction, shard_hint)
        self.lane = lane

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        stack = self.command_stack
        if (
            not stack
            or not self.is_transaction
            or self.watching
            or self.explicit_transaction
            or self.scripts
            or any(EMPTY_RESPONSE in options for _, options in stack)
        ):
            return await super().execute(raise_on_error)
        # hiredis packs the words (str, bytes, int, float) as redis-py's encoder would.
        words: list[Any] = []
        for command, _ in stack:
            words.append(len(command))
            words.extend(command)
        try:
            replies = await self.lane.run(TRANSACTION, (), words)
        finally:
            await self.reset()  # type: ignore[no-untyped-call]
        response = [
            BaseParser.parse_error(str(r))  # type: ignore[no-untyped-call]
            if isinstance(r, hiredis.ReplyError)
            else r
            for r in replies
        ]
        if raise_on_error:
            self.raise_first_error(stack, response)
        # redis-py's conversions, as its own transactions apply them.
        data = []
        for reply, (command, options) in zip(response, stack, strict=True):
            value = reply
            if not isinstance(reply, Exception):
                cast(dict[str, Any], options).pop("keys", None)  # as redis-py: not for callbacks
                callback = self.response_callbacks.get(command[0])
                if callback is not None:
                    value = callback(reply, **options)
                    if inspect.isawaitable(value):
                        value = await value
            data.append(value)
        return data


class PipedArqRedis(ArqRedis):
    """arq's client, whose WATCH-less transactions go through :attr:`lane`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lane = RedisPipe(self)

    @classmethod
    def over(cls, pool: ArqRedis) -> PipedArqRedis:
        """A client on ``pool``'s connections, with its settings."""
        return cls(
            pool.connection_pool,
            job_serializer=pool.job_serializer,
            job_deserializer=pool.job_deserializer,
            default_queue_name=pool.default_queue_name,
            expires_extra_ms=pool.expires_extra_ms,
        )

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Pipeline:
        return PipedTransaction(
            self.connection_pool, self.response_callbacks, transaction, shard_hint, lane=self.lane
        )

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        await self.lane.aclose()
        await super().aclose(close_connection_pool)


TOMBSTONE = b""
"""A finished job's value while it marks its id as seen: arq reads an empty job as none
(expired), and ``enqueue_job`` refuses an id whose key exists, as the intake does."""


class BatchWorker(Worker):
    """arq's :class:`~arq.worker.Worker`, claiming in batches (see the module). It reads
    due ids ``max_jobs`` at a time (arq's ``queue_read_limit`` goes unused).

    A finished job's key is not deleted but left as a :data:`TOMBSTONE` for
    ``replay_window_ms``: job ids name deliveries (:func:`webhooks.event.queue.event_id_for`),
    so the intake, which enqueues only ids whose key is absent, absorbs a sender's replay
    while the event waits, runs, and for the window after it finished, with one key a
    delivery. With ``replay_window_ms`` 0 the key is deleted, as arq does. With
    ``batch_claims`` off, jobs are claimed by arq's own poll.

    arq never cuts a try off: each job must keep its own time (see the module)."""

    def __init__(
        self, *args: Any, replay_window_ms: int = 0, batch_claims: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        # After arq sized the lease from it (in_progress_timeout_s): see the module. arq
        # annotates it a float, but only hands it to asyncio.wait_for (None: no timer).
        self.job_timeout_s = None  # type: ignore[assignment]
        self.replay_window_ms = replay_window_ms
        self.batch_claims = batch_claims
        self._slots_freed = asyncio.Event()

    def _retire(self, tr: Pipeline, job_id: str, *others: str) -> None:
        """Delete ``others`` and turn the job's key into its tombstone (in ``tr``)."""
        if self.replay_window_ms > 0:
            tr.set(job_key_prefix + job_id, TOMBSTONE, px=self.replay_window_ms)
            if others:
                tr.delete(*others)
        else:
            tr.delete(*others, job_key_prefix + job_id)

    async def finish_job(
        self,
        job_id: str,
        finish: bool,
        result_data: bytes | None,
        result_timeout_s: float | None,
        keep_result_forever: bool,
        incr_score: int | None,
        keep_in_progress: float | None,
    ) -> None:
        """arq's, with the job's key retired (:meth:`_retire`) rather than deleted."""
        in_progress_key = in_progress_key_prefix + job_id
        async with self.pool.pipeline(transaction=True) as tr:
            gone: tuple[str, ...] = (in_progress_key,)
            if keep_in_progress is not None:
                tr.pexpire(in_progress_key, to_ms(keep_in_progress))
                gone = ()
            if finish:
                if result_data:
                    expire = None if keep_result_forever else result_timeout_s
                    tr.set(result_key_prefix + job_id, result_data, px=to_ms(expire))
                self._retire(tr, job_id, *gone, retry_key_prefix + job_id)
                tr.zrem(abort_jobs_ss, job_id)
                tr.zrem(self.queue_name, job_id)
            else:
                if incr_score:
                    tr.zincrby(self.queue_name, incr_score, job_id)
                if gone:
                    tr.delete(*gone)
            await tr.execute()

    async def finish_failed_job(self, job_id: str, result_data: bytes | None) -> None:
        """arq's, with the job's key retired (:meth:`_retire`) rather than deleted."""
        async with self.pool.pipeline(transaction=True) as tr:
            self._retire(tr, job_id, retry_key_prefix + job_id, in_progress_key_prefix + job_id)
            tr.zrem(abort_jobs_ss, job_id)
            tr.zrem(self.queue_name, job_id)
            if result_data is not None and (self.keep_result_forever or self.keep_result_s > 0):
                expire = None if self.keep_result_forever else self.keep_result_s
                tr.set(result_key_prefix + job_id, result_data, px=to_ms(expire))
            await tr.execute()

    async def main(self) -> None:
        if not isinstance(self._pool, PipedArqRedis):
            self._pool = PipedArqRedis.over(self._pool or await self._connect())
        await super().main()

    async def _connect(self) -> ArqRedis:
        """arq's pool, once Redis answers: a worker started or restarted while Redis is
        out of reach waits for it (as a running worker does) instead of exiting when
        arq's own connection retries run out."""
        delay = self.poll_delay_s
        while True:
            try:
                return await create_pool(
                    self.redis_settings,
                    job_deserializer=self.job_deserializer,
                    job_serializer=self.job_serializer,
                    default_queue_name=self.queue_name,
                    expires_extra_ms=self.expires_extra_ms,
                )
            except (*_UNREACHABLE, OSError, TimeoutError) as exc:
                logger.warning(
                    "Redis out of reach at start; waiting for it", extra={"error": str(exc)}
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, _MAX_REDIS_WAIT)

    async def _poll_iteration(self) -> None:
        """arq's poll (claim, check aborts, reap finished tasks, heartbeat), repeated at
        once while a claim filled every free slot. Redis out of reach (a restart, a
        failover, a connect slower than its timeout) does not stop the worker: it waits
        until Redis answers again, its jobs still queued there, and polls on."""
        try:
            if self.batch_claims:
                await self._poll_until_idle()
            else:
                await super()._poll_iteration()
        except _UNREACHABLE as exc:
            logger.warning("Redis out of reach; waiting for it", extra={"error": str(exc)})
            await self._wait_for_redis()
            logger.warning("Redis reachable again")

    async def _wait_for_redis(self) -> None:
        delay = self.poll_delay_s
        while True:
            await asyncio.sleep(delay)
            with contextlib.suppress(*_UNREACHABLE):
                await self.pool.ping()
                return
            delay = min(delay * 2, _MAX_REDIS_WAIT)

    async def _poll_until_idle(self) -> None:
        while True:
            full = self.allow_pick_jobs and await self._claim()
            if self.allow_abort_jobs:
                await self._cancel_aborted_jobs()
            for job_id, task in list(self.tasks.items()):
                if task.done():
                    del self.tasks[job_id]
                    self._reap(job_id, task)
            await self.heart_beat()
            if not full:
                return
            await self._half_free()

    @staticmethod
    def _reap(job_id: str, task: asyncio.Task[Any]) -> None:
        """As arq, a failure of ``run_job`` itself stops the worker, but for Redis out of
        reach while it read or finished the job: the job keeps its lease, and once that
        lapses a worker claims it again (at least once, as for a killed worker)."""
        if not task.cancelled() and isinstance(task.exception(), _UNREACHABLE):
            logger.warning(
                "Redis out of reach during a job; it runs again once its lease lapses",
                extra={"job_id": job_id, "error": str(task.exception())},
            )
            return
        task.result()

    async def _claim(self) -> bool:
        """Start the due jobs that fit the free slots; whether they filled them."""
        wanted = self.max_jobs - self.job_counter
        if self.burst and self.max_burst_jobs >= 0:
            wanted = min(wanted, self.max_burst_jobs - self._jobs_started())
        if wanted < 1:
            return False
        lease_ms = int(self.in_progress_timeout_s * 1000)
        # A page of max_jobs ids: the worker's own running jobs, then as many as it wants.
        args = [timestamp_ms(), wanted, lease_ms, self.max_jobs, in_progress_key_prefix]
        lane = cast(PipedArqRedis, self.pool).lane  # see main()
        claimed: list[bytes] = await lane.run(CLAIM, [self.queue_name], args)
        for raw_id, score in zip(claimed[::2], claimed[1::2], strict=True):
            # arq's bookkeeping of a started job (Worker.start_jobs).
            await self.sem.acquire()
            self.job_counter += 1
            job_id = raw_id.decode()
            task = self.loop.create_task(self.run_job(job_id, int(float(score))))
            task.add_done_callback(lambda _: self._release_sem_dec_counter_on_complete())
            self.tasks[job_id] = task
        return len(claimed) == 2 * wanted

    async def _half_free(self) -> None:
        """Until half the slots are free (a claim worth its round trip), ``poll_delay``
        at the most."""
        if self.job_counter <= self.max_jobs // 2:
            return
        self._slots_freed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.poll_delay_s):
                await self._slots_freed.wait()

    def _release_sem_dec_counter_on_complete(self) -> None:
        super()._release_sem_dec_counter_on_complete()
        if self.job_counter <= self.max_jobs // 2:
            self._slots_freed.set()
