"""What ``/load-info`` reports: this process's threads and its database pool's connections,
as the reference reports its own."""

from __future__ import annotations

import threading

from sqlalchemy.ext.asyncio import AsyncEngine

from identity.server.repository import pool_connections
from identity.server.schemas import ServerLoadInfo


def load_info(engine: AsyncEngine) -> ServerLoadInfo:
    pool = pool_connections(engine)
    return ServerLoadInfo(
        threads=len(threading.enumerate()),
        db_connections_total=pool.idle + pool.active,
        db_connections_active=pool.active,
        db_connections_overflow=pool.overflow,
    )
