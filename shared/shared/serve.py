"""Command-line entry point shared by every service: ``python -m <service> --port P``."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Callable

import uvicorn

from shared import redis_pipe
from shared.http_protocol import HttpProtocol
from shared.logging import configure_logging
from shared.metrics import start_metrics_server
from shared.settings import ServiceSettings
from shared.tracing import configure_tracing
from shared.tracing import endpoint as tracing_endpoint

__all__ = ["GRACEFUL_SHUTDOWN_SECONDS", "main"]

GC_YOUNG = 5000
# On SIGTERM uvicorn stops accepting and lets requests in flight finish: for at most this
# long, so a stuck request cannot hold a rollout (Kubernetes' grace period is 40 s, after a
# 5 s preStop pause: deploy/k8s/base).
GRACEFUL_SHUTDOWN_SECONDS = 30


def main(
    *,
    app_factory: str,
    settings_factory: Callable[[], ServiceSettings],
    default_port: int,
    argv: list[str] | None = None,
) -> None:
    """Parse the command line and run ``app_factory`` under uvicorn. ``--http httptools``
    and ``--no-redis-pipe`` switch off the shortcuts of :mod:`shared.http_protocol` and
    :mod:`shared.redis_pipe` (see ``docs/performance.md``)."""
    parser = argparse.ArgumentParser(prog=app_factory.split(".", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=default_port)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--http",
        choices=("platform", "httptools"),
        default="platform",
        help="platform: shared.http_protocol.HttpProtocol; httptools: uvicorn's own",
    )
    parser.add_argument(
        "--no-redis-pipe", action="store_true", help="every Redis command through redis-py"
    )
    args = parser.parse_args(argv)
    try:
        settings = settings_factory()
    except Exception as exc:  # a bad setting is a one-line message, not a traceback
        print(f"invalid settings: {exc}", file=sys.stderr)  # noqa: T201
        raise SystemExit(2) from None
    configure_logging(settings.log_level, json_output=settings.log_json)
    if args.workers > 1 and tracing_endpoint(os.environ) is not None:
        # uvicorn's worker processes start the app without this function: they would not
        # trace. Run replicas of one worker each instead.
        print("OTEL_EXPORTER_OTLP_ENDPOINT needs --workers 1", file=sys.stderr)  # noqa: T201
        raise SystemExit(2)
    configure_tracing(settings.service_name)
    if settings.metrics_port:
        if args.workers > 1:
            # Each worker process has its own metrics, and only one could take the port:
            # run replicas of one worker each instead.
            print("METRICS_PORT needs --workers 1", file=sys.stderr)  # noqa: T201
            raise SystemExit(2)
        start_metrics_server(settings.metrics_port, settings.metrics_host)
    if args.no_redis_pipe:
        redis_pipe.DIRECT = False
    # Everything imported so far (the frameworks, the models, the app's modules) lives as
    # long as the process: moved out of the collector's way, a collection walks only what
    # requests allocate (gen-2 collections over the whole heap were a visible cost).
    importlib.import_module(app_factory.partition(":")[0])
    gc.collect()
    gc.freeze()
    # A young-generation collection every GC_YOUNG allocations, not every 700: a request
    # allocates hundreds of containers, nearly all freed by reference counting, and at
    # 700 the collector ran for every few requests (callgrind, webhook intake: 2.4% of a
    # delivery's instructions saved, ~10,600 of 447,000).
    gc.set_threshold(GC_YOUNG, *gc.get_threshold()[1:])
    uvicorn.run(
        app_factory,
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        http=HttpProtocol if args.http == "platform" else "httptools",
        log_config=None,
        access_log=False,
        proxy_headers=True,
        forwarded_allow_ips=settings.forwarded_allow_ips,
        server_header=False,
        date_header=True,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )
