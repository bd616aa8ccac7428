"""trigger executions: the next try of a waiting execution, an admin's retry

Transient failures are retried until a horizon in time (webhooks.event.retry); a pending
execution shows when it is tried next, and a failed one may be re-run once by an admin.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26 03:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_trigger_executions", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("next_attempt_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True)
        )
        batch_op.add_column(
            sa.Column("retried_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("webhook_trigger_executions", schema=None) as batch_op:
        batch_op.drop_column("retried_at")
        batch_op.drop_column("next_attempt_at")
