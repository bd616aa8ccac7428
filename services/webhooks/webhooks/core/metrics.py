"""The webhooks service's and worker's own Prometheus metrics (beside :mod:`shared.metrics`;
names and meanings: ``docs/operations.md``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from prometheus_client import Counter
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from redis import Redis
from redis.exceptions import RedisError

WEBHOOK_DELIVERIES = Counter(
    "platform_webhook_deliveries_total",
    "Webhook deliveries taken in, by provider and outcome (the webhook stats' categories:"
    " accepted, duplicate, auth_failed, invalid_payload, none for an inactive webhook).",
    ["provider", "outcome"],
)
WORKER_JOBS = Counter(
    "platform_worker_jobs_total",
    "Queue jobs the worker ended, by function and outcome (done, retry, dead_letter).",
    ["function", "outcome"],
)
EXECUTIONS_WAITING = Counter(
    "platform_worker_executions_waiting_on_tracking_total",
    "Trigger executions put off because tracking could not take the run yet (retried later).",
)
EXECUTIONS_GIVEN_UP = Counter(
    "platform_worker_executions_given_up_total",
    "Trigger executions failed because tracking stayed unavailable past the retry horizon.",
)


class QueueCollector(Collector):
    """The event queue's depth and the age of its oldest due job, read from Redis at each
    scrape (three commands in one round trip, whatever the queue's length), on a
    synchronous client of its own: the metrics server's thread cannot use the worker's
    event loop. Redis out of reach: ``platform_queue_up`` 0 and no other series."""

    def __init__(
        self, redis_url: str, queue: str, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.redis: Redis = Redis.from_url(redis_url, socket_timeout=1, socket_connect_timeout=1)
        self.queue = queue
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("platform_queue_up", "Whether the queue could be read.")
        now_ms = int(self.clock() * 1000)
        try:
            with self.redis.pipeline(transaction=False) as pipe:
                pipe.zcard(self.queue)
                pipe.zcount(self.queue, "-inf", now_ms)
                pipe.zrange(self.queue, 0, 0, withscores=True)
                total, due, first = pipe.execute()
        except (RedisError, OSError):
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        jobs = GaugeMetricFamily(
            "platform_queue_jobs",
            "Jobs in the event queue: due (waiting or running) and deferred (a retry's later try).",
            labels=["state"],
        )
        jobs.add_metric(["due"], due)
        jobs.add_metric(["deferred"], total - due)
        yield jobs
        oldest = first[0][1] if first else now_ms
        yield GaugeMetricFamily(
            "platform_queue_oldest_job_age_seconds",
            "How long the oldest due job has been due (0: none is).",
            value=max(0.0, (now_ms - oldest) / 1000),
        )
