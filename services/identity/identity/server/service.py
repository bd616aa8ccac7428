"""What ``/load-info`` reports: this process's threads and its database pool's connections,
read as the reference reads its own (a queue pool's idle and checked-out connections)."""

from __future__ import annotations

import threading

from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import QueuePool

from identity.server.schemas import ServerLoadInfo


def load_info(engine: AsyncEngine) -> ServerLoadInfo:
    threads = len(threading.enumerate())
    pool = engine.sync_engine.pool
    if not isinstance(pool, QueuePool):  # a pool that keeps no connection open
        return ServerLoadInfo(
            threads=threads, db_connections_total=0, db_connections_active=0,
            db_connections_overflow=0,
        )  # fmt: skip
    active = pool.checkedout()
    return ServerLoadInfo(
        threads=threads,
        db_connections_total=pool.checkedin() + active,
        db_connections_active=active,
        db_connections_overflow=max(0, pool.overflow()),
    )
