"""Revisions that move data: raw bodies kept per delivery id become bodies kept per
event (0003), and back."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.engine import Connection
from sqlmodel.sql.sqltypes import UTCDateTime

from shared.db import create_engine, utcnow
from shared.migrations import alembic_config
from tests.support.databases import migrations_of

WEBHOOK, OTHER = uuid.uuid4(), uuid.uuid4()
FIRST, SECOND, THIRD = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()

webhooks = sa.table(
    "webhooks",
    *(sa.column(name, sa.Uuid()) for name in ("id", "project_id")),
    *(sa.column(name, sa.String()) for name in ("name", "webhook_type", "secret_ciphertext")),
    sa.column("active", sa.Boolean()),
    sa.column("version", sa.Integer()),
    *(sa.column(name, UTCDateTime()) for name in ("created", "updated")),
)
events = sa.table(
    "webhook_events",
    *(sa.column(name, sa.Uuid()) for name in ("id", "webhook_id", "project_id")),
    *(sa.column(name, sa.String()) for name in ("webhook_type", "delivery_id", "status")),
    sa.column("matched", sa.Integer()),
    *(sa.column(name, UTCDateTime()) for name in ("received_at", "created")),
)


def payloads(*keys: str) -> sa.TableClause:
    """The bodies' table, keyed by ``keys`` (``event_id`` from 0003, before that
    ``webhook_id`` and ``delivery_id``)."""
    return sa.table(
        "webhook_event_payloads",
        *(sa.column(name, sa.Uuid()) for name in ("event_id", "webhook_id") if name in keys),
        sa.column("delivery_id", sa.String()),
        sa.column("body", sa.LargeBinary()),
        sa.column("created", UTCDateTime()),
    )


@pytest.fixture
def database_service() -> None:
    """An empty database: the test runs the revisions itself."""
    return None


def migrate(connection: Connection, revision: str, *, down: bool = False) -> None:
    config = alembic_config(migrations_of("webhooks"), connection)
    (command.downgrade if down else command.upgrade)(config, revision)


def seed(connection: Connection) -> None:
    """Two events recorded under one delivery id (sharing the one body kept for it), an
    event of another delivery id, and a body of another webhook no event has."""
    now, project = utcnow(), uuid.uuid4()
    connection.execute(
        sa.insert(webhooks),
        [
            {
                "id": hook,
                "project_id": project,
                "name": name,
                "webhook_type": "custom",
                "secret_ciphertext": "x",
                "active": True,
                "version": 1,
                "created": now,
                "updated": now,
            }
            for hook, name in ((WEBHOOK, "one"), (OTHER, "two"))
        ],
    )
    connection.execute(
        sa.insert(events),
        [
            {
                "id": event,
                "webhook_id": WEBHOOK,
                "project_id": project,
                "webhook_type": "custom",
                "delivery_id": delivery,
                "status": "processed",
                "matched": 1,
                "received_at": now,
                "created": now,
            }
            for event, delivery in ((FIRST, "d-1"), (SECOND, "d-1"), (THIRD, "d-2"))
        ],
    )
    connection.execute(
        sa.insert(payloads("webhook_id")),
        [
            {"webhook_id": hook, "delivery_id": delivery, "body": body, "created": now}
            for hook, delivery, body in (
                (WEBHOOK, "d-1", b"one"),
                (WEBHOOK, "d-2", b"two"),
                (OTHER, "d-9", b"orphan"),
            )
        ],
    )


def bodies(connection: Connection, key: str) -> set[tuple[Any, ...]]:
    table = payloads(key)
    query = sa.select(table.c[key], table.c.delivery_id, table.c.body)
    return {tuple(row) for row in connection.execute(query)}


async def test_each_event_keeps_the_body_its_delivery_id_kept_and_back(database_url):
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(migrate, "0002")
            await conn.run_sync(seed)
        async with engine.begin() as conn:
            await conn.run_sync(migrate, "head")
            by_event = await conn.run_sync(bodies, "event_id")
        async with engine.begin() as conn:
            await conn.run_sync(migrate, "0002", down=True)
            by_delivery = await conn.run_sync(bodies, "webhook_id")
    finally:
        await engine.dispose()
    assert by_event == {(FIRST, "d-1", b"one"), (SECOND, "d-1", b"one"), (THIRD, "d-2", b"two")}
    # Down again, one body per delivery id (the orphan of the other webhook was not kept).
    assert by_delivery == {(WEBHOOK, "d-1", b"one"), (WEBHOOK, "d-2", b"two")}
