"""The webhook event consumer: an arq worker process (``python -m webhooks.worker``).

arq's lease on a running job lasts ``worker_job_timeout + worker_lease_margin``; a job
whose worker was killed is taken up again once its lease lapses, so these two settings
bound how long a crash delays an event. arq's try limit is lifted: a job is retried until
its horizon in time (``worker_retry_horizon``, :mod:`webhooks.event.retry`).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
from typing import Any

import httpx
from arq.connections import RedisSettings
from arq.worker import func
from prometheus_client import REGISTRY

from shared import redis_pipe
from shared.db import Clock, create_engine, create_sessionmaker, utcnow
from shared.http import create_http_client, service_auth
from shared.logging import configure_logging
from shared.metrics import start_metrics_server
from shared.tracing import configure_tracing
from webhooks.core.metrics import QueueCollector
from webhooks.event.batch_worker import BatchWorker
from webhooks.event.dispatch import SnapshotRunner, TrackingSnapshotRunner
from webhooks.event.queue import PROCESS_EVENT, RETRY_EXECUTION, deserializer, serializer
from webhooks.event.retry import RetryPolicy
from webhooks.event.tasks import Consumer, process_event, retry_execution
from webhooks.intake.providers import providers
from webhooks.settings import Settings

logger = logging.getLogger(__name__)
# Tries are not counted (arq's retry counter even expires a day after a try): the retry
# horizon, in time, ends a job that keeps failing.
UNCOUNTED_TRIES = sys.maxsize


def redis_settings(url: str) -> RedisSettings:
    """arq's settings for ``url``, with a connect timeout of seconds, not arq's one: a
    loaded machine can take that long, and the worker connects again only when it must."""
    settings = RedisSettings.from_dsn(url)
    settings.conn_timeout = 5
    return settings


def create_worker(
    settings: Settings,
    *,
    http_transport: httpx.AsyncBaseTransport | None = None,
    runner: SnapshotRunner | None = None,
    burst: bool = False,
    clock: Clock = utcnow,
    batch_claims: bool = True,
) -> BatchWorker:
    """An arq worker consuming ``settings.queue_name``, claiming jobs in batches (see
    :mod:`webhooks.event.batch_worker`; ``batch_claims=False``: as arq does). Tests pass
    ``burst`` (stop when the queue is empty), a transport or runner reaching their fakes,
    and a ``clock`` that the retry horizon is judged by."""
    timeout = settings.worker_job_timeout.total_seconds()

    async def startup(ctx: dict[str, Any]) -> None:
        engine = create_engine(settings.database_url, pool_size=settings.database_pool_size)
        http = create_http_client(settings, transport=http_transport)
        ctx["engine"], ctx["http"] = engine, http
        ctx["consumer"] = Consumer(
            create_sessionmaker(engine),
            providers(settings.signature_tolerance.total_seconds()),
            runner
            or TrackingSnapshotRunner(http, settings.tracking_url, service_auth(settings, http)),
            retries=RetryPolicy(
                first_delay=settings.worker_retry_delay,
                max_delay=settings.worker_retry_max_delay,
                horizon=settings.worker_retry_horizon,
            ),
            trigger_ttl=settings.worker_trigger_cache_ttl.total_seconds(),
            clock=clock,
        )
        ctx["job_budget"] = timeout * 0.9

    async def shutdown(ctx: dict[str, Any]) -> None:
        await ctx["http"].aclose()
        await ctx["engine"].dispose()

    worker = BatchWorker(
        functions=[
            func(process_event, name=PROCESS_EVENT, max_tries=UNCOUNTED_TRIES),
            func(retry_execution, name=RETRY_EXECUTION, max_tries=UNCOUNTED_TRIES),
        ],
        queue_name=settings.queue_name,
        redis_settings=redis_settings(settings.redis_url),
        on_startup=startup,
        on_shutdown=shutdown,
        job_timeout=timeout,
        max_tries=UNCOUNTED_TRIES,
        max_jobs=settings.worker_max_jobs,
        poll_delay=settings.worker_poll_delay.total_seconds(),
        keep_result=0,
        job_serializer=serializer,
        job_deserializer=deserializer,
        burst=burst,
        handle_signals=not burst,
        # On SIGTERM (a rollout, a scale-down), stop claiming and let the jobs in flight
        # finish, for up to a job's timeout, instead of cancelling them to run again.
        job_completion_wait=int(timeout) + 1,
        health_check_interval=60,
        # One key per worker process (arq's default is one per queue, which replicas
        # would overwrite in turn).
        health_check_key=f"{settings.queue_name}:health-check:{socket.gethostname()}:{os.getpid()}",
        # A finished event's job key stays this long, absorbing its sender's replays.
        replay_window_ms=int(settings.delivery_dedupe_window.total_seconds() * 1000),
        batch_claims=batch_claims,
    )
    # arq's lease is the longest job timeout + a fixed 10 s; ours is configurable, so a
    # killed worker's jobs come back within seconds where that matters.
    worker.in_progress_timeout_s = timeout + settings.worker_lease_margin.total_seconds()
    return worker


def main(argv: list[str] | None = None) -> None:
    """``python -m webhooks.worker [--arq-claims] [--no-redis-pipe]``: both switch
    off the worker's shortcuts (see ``docs/performance.md``)."""
    parser = argparse.ArgumentParser(prog="webhooks.worker")
    parser.add_argument("--arq-claims", action="store_true", help="claim jobs as arq does")
    parser.add_argument(
        "--no-redis-pipe", action="store_true", help="every Redis command through redis-py"
    )
    args = parser.parse_args(argv)
    if args.no_redis_pipe:
        redis_pipe.DIRECT = False
    settings = Settings()
    configure_logging(settings.log_level, json_output=settings.log_json)
    configure_tracing(f"{settings.service_name}-worker")
    # arq logs two lines per job with its arguments (the event's payload); failures are
    # logged by the consumer instead.
    logging.getLogger("arq.worker").setLevel(logging.WARNING)
    logger.info("webhooks worker consuming %s", settings.queue_name)
    if settings.metrics_port:
        REGISTRY.register(QueueCollector(settings.redis_url, settings.queue_name))
        start_metrics_server(settings.metrics_port, settings.metrics_host)
    asyncio.set_event_loop(asyncio.new_event_loop())  # arq's Worker adopts the current loop
    create_worker(settings, batch_claims=not args.arq_claims).run()


if __name__ == "__main__":
    main()
