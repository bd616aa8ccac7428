"""``/health`` (the process is up) and ``/ready`` (its database and Redis answer)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from shared.db import ping
from shared.errors import ServiceUnavailable
from shared.middleware import current_request_id
from shared.responses import error_response

__all__: list[str] = []  # nothing outside shared uses it

logger = logging.getLogger(__name__)

READY_TIMEOUT = 2.0
ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


async def health(_request: Request) -> Response:
    return PlainTextResponse("ok")


async def _check(name: str, probe: Callable[[], Awaitable[object]]) -> str | None:
    try:
        await asyncio.wait_for(probe(), READY_TIMEOUT)
    except Exception as exc:  # every failure means "not ready"; the reason goes to the log
        logger.warning("readiness check failed", extra={"check": name, "error": repr(exc)})
        return name
    return None


async def ready(request: Request) -> Response:
    state = request.state
    failed = [
        name
        for name in await asyncio.gather(
            _check("database", lambda: ping(state.engine)),
            _check("redis", lambda: state.redis.ping()),
        )
        if name
    ]
    if failed:
        error = ServiceUnavailable(f"Not ready: {', '.join(failed)} unreachable.")
        return error_response(error, current_request_id())
    return PlainTextResponse("ok")


def health_routes() -> list[Route]:
    # Any method answers, as the reference's short-circuiting middleware does.
    return [
        Route("/health", health, methods=ALL_METHODS, include_in_schema=False),
        Route("/ready", ready, methods=ALL_METHODS, include_in_schema=False),
    ]
