"""The database pool's connections, read as the reference reads its own pool's."""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import QueuePool


class PoolConnections(NamedTuple):
    idle: int
    active: int
    overflow: int


def pool_connections(engine: AsyncEngine) -> PoolConnections:
    """A queue pool's idle, checked-out and overflow connections (every engine shared.db
    makes has one); a pool of another kind keeps none open."""
    pool = engine.sync_engine.pool
    if not isinstance(pool, QueuePool):
        return PoolConnections(0, 0, 0)
    return PoolConnections(pool.checkedin(), pool.checkedout(), max(0, pool.overflow()))
