"""The batch-claiming arq worker on a real Redis: which jobs a claim takes (not one
running elsewhere, not one due later), two workers on one queue, a backlog drained
without a ``poll_delay`` per batch, and arq's keys and transactions left as arq's."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.constants import (
    in_progress_key_prefix,
    job_key_prefix,
    result_key_prefix,
    retry_key_prefix,
)
from arq.worker import Retry, func
from redis.exceptions import ResponseError

from tests.support.redis_server import RestartableValkey
from webhooks.event.batch_worker import TOMBSTONE, BatchWorker, PipedArqRedis

JOB = "job"


@dataclass
class Runs:
    """What the job function saw: every start, and any job started while still running."""

    started: list[tuple[str, int, float]] = field(default_factory=list)  # (id, try, time)
    running: set[str] = field(default_factory=set)
    overlapping: list[str] = field(default_factory=list)
    hold: float = 0.0  # how long each run takes
    retry_first_try: float | None = None  # Retry(defer=…) on a job's first try
    on_first_run: Callable[[], Awaitable[None]] | None = None  # before the first job returns

    async def job(self, ctx: dict[str, Any], *_: Any) -> None:
        job_id = ctx["job_id"]
        if job_id in self.running:
            self.overlapping.append(job_id)
        self.running.add(job_id)
        self.started.append((job_id, ctx["job_try"], time.monotonic()))
        try:
            if self.on_first_run is not None and len(self.started) == 1:
                await self.on_first_run()
            if self.hold:
                await asyncio.sleep(self.hold)
            if self.retry_first_try is not None and ctx["job_try"] == 1:
                raise Retry(defer=self.retry_first_try)
        finally:
            self.running.discard(job_id)

    def ids(self) -> list[str]:
        return [job_id for job_id, _, _ in self.started]

    def at(self, job_id: str) -> float:
        (when,) = [t for i, _, t in self.started if i == job_id]
        return when


@pytest.fixture
async def arq_redis(redis_url: str) -> AsyncIterator[ArqRedis]:
    pool = await create_pool(RedisSettings.from_dsn(redis_url))
    yield pool
    await pool.aclose()


@pytest.fixture
def queue(redis_namespace: str) -> str:
    return f"{redis_namespace}:jobs"


@pytest.fixture
def make_worker(redis_url: str, queue: str) -> Callable[..., BatchWorker]:
    def _make(runs: Runs, **options: Any) -> BatchWorker:
        values: dict[str, Any] = {
            "burst": True,
            "handle_signals": False,
            "max_jobs": 10,
            "poll_delay": 0.05,
            "keep_result": 0,
            "max_tries": 5,
            "redis_settings": RedisSettings.from_dsn(redis_url),
        }
        values.update(options)
        return BatchWorker(
            functions=[func(runs.job, name=JOB)],
            queue_name=queue,
            **values,
        )

    return _make


async def run(*workers: BatchWorker) -> None:
    """Until every (burst) worker found the queue empty."""
    try:
        await asyncio.wait_for(asyncio.gather(*(w.async_run() for w in workers)), 60)
    finally:
        with warnings.catch_warnings():
            # arq closes its pool with redis-py's deprecated close().
            warnings.filterwarnings("ignore", "Call to deprecated close", DeprecationWarning)
            for worker in workers:
                await worker.close()


async def enqueue(arq_redis: ArqRedis, queue: str, count: int, **options: Any) -> list[str]:
    ids = [uuid.uuid4().hex for _ in range(count)]
    for job_id in ids:
        assert await arq_redis.enqueue_job(JOB, _job_id=job_id, _queue_name=queue, **options)
    return ids


async def test_a_job_whose_in_progress_key_exists_is_not_claimed(
    arq_redis: ArqRedis, queue: str, make_worker: Callable[..., BatchWorker]
) -> None:
    held, free = await enqueue(arq_redis, queue, 2)
    # Another worker's lease on `held`, lapsing in 1 s (as a killed worker's does).
    leased_at = time.monotonic()
    await arq_redis.psetex(in_progress_key_prefix + held, 1000, b"1")
    runs = Runs()
    await run(make_worker(runs))
    assert sorted(runs.ids()) == sorted([held, free])
    assert runs.at(free) < runs.at(held)
    assert runs.at(held) >= leased_at + 0.9  # not before the lease lapsed
    assert await arq_redis.zcard(queue) == 0


async def test_a_job_scheduled_in_the_future_is_not_claimed_until_due(
    arq_redis: ArqRedis, queue: str, make_worker: Callable[..., BatchWorker]
) -> None:
    enqueued_at = time.monotonic()
    (later,) = await enqueue(arq_redis, queue, 1, _defer_by=1.0)
    (now,) = await enqueue(arq_redis, queue, 1)
    runs = Runs()
    await run(make_worker(runs))
    assert runs.ids() == [now, later]
    assert runs.at(later) >= enqueued_at + 0.9


@pytest.mark.parametrize("batch_claims", [True, False])  # False: arq's claims (off switch)
async def test_two_workers_draining_one_queue_run_every_job_exactly_once(
    arq_redis: ArqRedis, queue: str, make_worker: Callable[..., BatchWorker], batch_claims: bool
) -> None:
    ids = await enqueue(arq_redis, queue, 300)
    runs = Runs(hold=0.005)
    first = make_worker(runs, batch_claims=batch_claims)
    second = make_worker(runs, batch_claims=batch_claims)
    await run(first, second)
    assert sorted(runs.ids()) == sorted(ids)  # each once
    assert runs.overlapping == []
    assert first.jobs_complete > 0
    assert second.jobs_complete > 0
    assert first.jobs_complete + second.jobs_complete == len(ids)
    assert await arq_redis.zcard(queue) == 0


async def test_a_backlog_of_many_batches_drains_without_a_poll_delay_per_batch(
    arq_redis: ArqRedis, queue: str, make_worker: Callable[..., BatchWorker]
) -> None:
    batch, poll_delay = 10, 0.5
    ids = await enqueue(arq_redis, queue, 600)
    runs = Runs()
    worker = make_worker(runs, max_jobs=batch, poll_delay=poll_delay)
    started = time.monotonic()
    await run(worker)
    took = time.monotonic() - started
    assert sorted(runs.ids()) == sorted(ids)
    # Sleeping poll_delay between batches would take len(ids) / batch * poll_delay = 30 s.
    assert took < len(ids) / batch * poll_delay / 3, took


async def test_a_retried_job_runs_again_once_its_defer_lapsed(
    arq_redis: ArqRedis, queue: str, make_worker: Callable[..., BatchWorker]
) -> None:
    (job_id,) = await enqueue(arq_redis, queue, 1)
    runs = Runs(retry_first_try=0.5)
    worker = make_worker(runs)
    await run(worker)
    (first, first_try, first_at), (again, second_try, again_at) = runs.started
    assert (first, first_try, again, second_try) == (job_id, 1, job_id, 2)
    assert again_at >= first_at + 0.4
    assert (worker.jobs_retried, worker.jobs_complete) == (1, 1)


async def test_a_finished_job_leaves_no_key_behind(
    arq_redis: ArqRedis, queue: str, make_worker: Callable[..., BatchWorker]
) -> None:
    """arq's own cleanup (keep_result=0): job, retry and in-progress keys gone, no result."""
    ids = await enqueue(arq_redis, queue, 3)
    await run(make_worker(Runs()))
    for job_id in ids:
        for prefix in (job_key_prefix, retry_key_prefix, in_progress_key_prefix):
            assert not await arq_redis.exists(prefix + job_id), prefix
        assert not await arq_redis.exists(result_key_prefix + job_id)
    assert await arq_redis.zcard(queue) == 0


async def test_a_finished_job_keeps_its_key_as_a_tombstone_for_the_replay_window(
    arq_redis: ArqRedis, queue: str, make_worker: Callable[..., BatchWorker]
) -> None:
    """With a replay window, the job key stays (empty, expiring) and marks the id as seen:
    arq refuses to enqueue it again, and nothing runs twice."""
    ids = await enqueue(arq_redis, queue, 3)
    runs = Runs()
    await run(make_worker(runs, replay_window_ms=60_000))
    assert sorted(runs.ids()) == sorted(ids)
    for job_id in ids:
        assert await arq_redis.get(job_key_prefix + job_id) == TOMBSTONE
        assert 0 < await arq_redis.pttl(job_key_prefix + job_id) <= 60_000
        for prefix in (retry_key_prefix, in_progress_key_prefix, result_key_prefix):
            assert not await arq_redis.exists(prefix + job_id), prefix
        assert await arq_redis.enqueue_job(JOB, _job_id=job_id, _queue_name=queue) is None
    assert await arq_redis.zcard(queue) == 0
    again = Runs()
    await run(make_worker(again, replay_window_ms=60_000))
    assert again.started == []


async def test_a_job_that_failed_for_good_is_tombstoned_too(
    arq_redis: ArqRedis, queue: str, make_worker: Callable[..., BatchWorker]
) -> None:
    """arq's failure path (tries exhausted) retires the key alike."""
    (job_id,) = await enqueue(arq_redis, queue, 1)
    worker = make_worker(Runs(retry_first_try=0.05), max_tries=1, replay_window_ms=60_000)
    await run(worker)
    assert worker.jobs_failed == 1
    assert await arq_redis.get(job_key_prefix + job_id) == TOMBSTONE
    assert not await arq_redis.exists(retry_key_prefix + job_id, in_progress_key_prefix + job_id)
    assert await arq_redis.zcard(queue) == 0


async def test_an_expired_job_fails_without_running(
    arq_redis: ArqRedis, queue: str, make_worker: Callable[..., BatchWorker]
) -> None:
    await enqueue(arq_redis, queue, 1, _expires=0.05)
    await asyncio.sleep(0.2)  # the job's key is gone; its id is still queued
    runs = Runs()
    worker = make_worker(runs)
    await run(worker)
    assert runs.started == []
    assert worker.jobs_failed == 1
    assert await arq_redis.zcard(queue) == 0


async def _transact(
    redis: ArqRedis, build: Callable[[Any], None], *, raise_on_error: bool
) -> list[Any]:
    async with redis.pipeline(transaction=True) as tr:
        build(tr)
        result: list[Any] = await tr.execute(raise_on_error=raise_on_error)
    return result


async def test_a_piped_transaction_answers_as_redis_pys_own(
    arq_redis: ArqRedis, redis_namespace: str
) -> None:
    piped = PipedArqRedis.over(arq_redis)
    key = f"{redis_namespace}:tx"

    def commands(prefix: str) -> Callable[[Any], None]:
        def build(tr: Any) -> None:
            tr.set(prefix + "s", b"v", px=60_000)
            tr.get(prefix + "s")
            tr.get(prefix + "missing")
            tr.incr(prefix + "n")
            tr.expire(prefix + "n", 60)
            tr.zadd(prefix + "z", {"a": 1})
            tr.zincrby(prefix + "z", 2.5, "a")
            tr.zrange(prefix + "z", 0, -1, withscores=True)
            tr.incr(prefix + "s")  # an error: not an integer
            tr.delete(prefix + "s", prefix + "n", prefix + "z")

        return build

    try:
        ours = await _transact(piped, commands(key + ":piped:"), raise_on_error=False)
        theirs = await _transact(arq_redis, commands(key + ":plain:"), raise_on_error=False)
        errors = [i for i, r in enumerate(ours) if isinstance(r, ResponseError)]
        assert errors == [i for i, r in enumerate(theirs) if isinstance(r, ResponseError)] == [8]
        assert ours[:8] + ours[9:] == theirs[:8] + theirs[9:]
        assert ours[-1] == 3  # the command after the error ran
        with pytest.raises(ResponseError, match="not an integer"):
            await _transact(piped, commands(key + ":raising:"), raise_on_error=True)
    finally:
        await piped.lane.aclose()
        await arq_redis.delete(key + ":raising:s", key + ":raising:n", key + ":raising:z")


async def test_a_worker_started_while_redis_is_away_waits_for_it(
    tmp_path: Path, make_worker: Callable[..., BatchWorker], queue: str
) -> None:
    """A worker (re)started during a Redis outage, as a supervisor restarts one, waits for
    Redis past arq's own connection retries rather than exiting, then runs the queue."""
    with RestartableValkey(tmp_path, "--appendonly", "yes", "--appendfsync", "always") as valkey:
        pool = await create_pool(RedisSettings.from_dsn(valkey.url))
        try:
            ids = await enqueue(pool, queue, 5)
        finally:
            await pool.aclose()
        valkey.stop()  # the queue kept on disk
        settings = RedisSettings.from_dsn(valkey.url)
        settings.conn_retries, settings.conn_retry_delay = 1, 0  # arq gives up at once
        runs = Runs()
        worker = make_worker(runs, redis_settings=settings)

        async def come_back() -> None:
            await asyncio.sleep(1.0)  # several of the worker's connects fail meanwhile
            await asyncio.to_thread(valkey.start)

        await asyncio.gather(run(worker), come_back())
        assert sorted(runs.ids()) == sorted(ids)


async def test_a_worker_outlives_a_redis_restart(
    tmp_path: Path, make_worker: Callable[..., BatchWorker], queue: str
) -> None:
    """Redis gone for a moment (a restart, a failover) costs the worker the polls that
    could not reach it, not its life: it connects again and runs the rest of the queue,
    and a job that could not be started or finished meanwhile runs again."""
    with RestartableValkey(tmp_path, "--appendonly", "yes", "--appendfsync", "always") as valkey:
        url = valkey.url
        pool = await create_pool(RedisSettings.from_dsn(url))
        try:
            ids = await enqueue(pool, queue, 20)
            restarted = asyncio.Event()

            async def restart() -> None:
                valkey.stop()  # its queue kept on disk
                await asyncio.sleep(0.5)  # several polls find it gone
                await asyncio.to_thread(valkey.start)
                restarted.set()

            runs = Runs(on_first_run=restart)
            worker = make_worker(
                runs, redis_settings=RedisSettings.from_dsn(url), max_jobs=2, burst=False
            )
            worker.in_progress_timeout_s = 1.0  # a job whose start or finish failed comes back
            running = asyncio.ensure_future(worker.async_run())
            try:
                async with asyncio.timeout(30):
                    # Until every job ran and finished (the queue empty, no job's task still
                    # finishing: closing cancels those), the worker alive.
                    while (
                        not restarted.is_set()
                        or await pool.zcard(queue)
                        or not all(task.done() for task in worker.tasks.values())
                    ):
                        assert not running.done()
                        await asyncio.sleep(0.05)
            finally:
                with warnings.catch_warnings():
                    # arq closes its pool with redis-py's deprecated close().
                    warnings.filterwarnings("ignore", "Call to deprecated", DeprecationWarning)
                    await worker.close()
                with contextlib.suppress(asyncio.CancelledError):
                    await running
            assert set(runs.ids()) == set(ids)
        finally:
            await pool.aclose()
