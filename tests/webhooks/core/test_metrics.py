"""The event queue's metrics, read from the exposition at scrape time."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from shared.redis import create_redis
from tests.support.metrics import sample
from tests.support.redis_server import free_port
from webhooks.core.metrics import QueueCollector

NOW = 1_800_000_000.0


def registry_of(collector: QueueCollector) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(collector)
    return registry


async def test_queue_depth_and_oldest_due_jobs_age(redis_url: str, redis_namespace: str):
    queue = f"{redis_namespace}:webhooks:events"
    now_ms = int(NOW * 1000)
    redis = create_redis(redis_url)
    await redis.zadd(queue, {"a": now_ms - 90_000, "b": now_ms - 5_000, "later": now_ms + 1})
    try:
        registry = registry_of(QueueCollector(redis_url, queue, clock=lambda: NOW))
        assert sample("platform_queue_up", registry=registry) == 1
        assert sample("platform_queue_jobs", registry=registry, state="due") == 2
        assert sample("platform_queue_jobs", registry=registry, state="deferred") == 1
        assert sample("platform_queue_oldest_job_age_seconds", registry=registry) == 90
    finally:
        await redis.delete(queue)
        await redis.aclose()


def test_an_empty_queue_has_no_age(redis_url: str, redis_namespace: str):
    queue = f"{redis_namespace}:webhooks:empty"
    registry = registry_of(QueueCollector(redis_url, queue, clock=lambda: NOW))
    assert sample("platform_queue_jobs", registry=registry, state="due") == 0
    assert sample("platform_queue_oldest_job_age_seconds", registry=registry) == 0


def test_redis_out_of_reach_reads_as_down_not_an_error():
    collector = QueueCollector(f"redis://127.0.0.1:{free_port()}/0", "q", clock=lambda: NOW)
    registry = registry_of(collector)
    assert sample("platform_queue_up", registry=registry) == 0
    assert sample("platform_queue_jobs", registry=registry, state="due") == 0
