"""The Redis connection every service holds, and its key namespace."""

from __future__ import annotations

from redis.asyncio import Redis

from shared.metrics import TimedRedis

__all__ = ["Keys", "create_redis"]


def create_redis(url: str, *, timeout: float = 2.0) -> Redis:
    """A pooled client; commands time out instead of hanging when Redis is gone."""
    client: Redis = TimedRedis.from_url(
        url,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        health_check_interval=30,
        decode_responses=False,
    )
    return client


class Keys:
    """Builds namespaced keys, so several stacks (or test runs) can share one Redis."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace

    def __call__(self, *parts: object) -> str:
        return ":".join([self.namespace, *(str(p) for p in parts)])
