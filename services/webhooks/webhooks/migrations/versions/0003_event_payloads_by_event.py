"""raw bodies kept per event, not per delivery id

A delivery id may be an unsigned header that two events share (codehost's
X-GitHub-Delivery, a custom `sha256=` sender's X-Webhook-Delivery), so each event keeps
its own body under its id. An existing body is carried over to every event recorded with
its (webhook, delivery id): it was the only body those events kept.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26 04:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "webhook_event_payloads"
# The table being replaced, while its rows are copied. On PostgreSQL its constraints keep
# their names (`webhook_event_payloads_pkey`, `..._webhook_id_fkey`), which are taken in
# the schema until it is dropped, so the new table's are named apart.
OLD = "webhook_event_payloads_old"
INDEX = "ix_webhook_event_payloads_delivery"


def _columns() -> list[sa.Column[object]]:
    return [
        sa.Column("webhook_id", sa.Uuid(), nullable=False),
        sa.Column("delivery_id", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("created", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    ]


def upgrade() -> None:
    op.rename_table(TABLE, OLD)
    op.create_table(
        TABLE,
        sa.Column("event_id", sa.Uuid(), nullable=False),
        *_columns(),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["webhook_events.id"],
            name="fk_webhook_event_payloads_event_id",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["webhook_id"],
            ["webhooks.id"],
            name="fk_webhook_event_payloads_webhook_id",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("event_id", name="pk_webhook_event_payloads"),
    )
    op.execute(
        "INSERT INTO webhook_event_payloads (event_id, webhook_id, delivery_id, body, created) "
        "SELECT e.id, p.webhook_id, p.delivery_id, p.body, p.created "
        "FROM webhook_event_payloads_old p JOIN webhook_events e "
        "ON e.webhook_id = p.webhook_id AND e.delivery_id = p.delivery_id"
    )
    op.drop_table(OLD)
    op.create_index(INDEX, TABLE, ["webhook_id", "delivery_id"], unique=False)


def downgrade() -> None:
    """One body per (webhook, delivery id) again: the first recorded event's."""
    op.drop_index(INDEX, table_name=TABLE)
    op.rename_table(TABLE, OLD)
    op.create_table(
        TABLE,
        *_columns(),
        sa.ForeignKeyConstraint(["webhook_id"], ["webhooks.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("webhook_id", "delivery_id"),
    )
    op.execute(
        "INSERT INTO webhook_event_payloads (webhook_id, delivery_id, body, created) "
        "SELECT p.webhook_id, p.delivery_id, p.body, p.created FROM webhook_event_payloads_old p "
        "WHERE p.event_id = (SELECT q.event_id FROM webhook_event_payloads_old q "
        "WHERE q.webhook_id = p.webhook_id AND q.delivery_id = p.delivery_id "
        "ORDER BY q.created, q.event_id LIMIT 1)"
    )
    op.drop_table(OLD)
