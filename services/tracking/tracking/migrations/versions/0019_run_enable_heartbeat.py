"""A run's heartbeat switch: the reference's PUT /runs/{id}/disable_heartbeat

``pipeline_runs.enable_heartbeat``: whether the run's steps' heartbeats are watched (its
snapshot's ``enable_heartbeat``, unset meaning yes, until switched off); existing runs
keep theirs on.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27 23:25:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "pipeline_runs",
        sa.Column("enable_heartbeat", sa.Boolean(), nullable=False, server_default=sa.true()),
    )


def downgrade() -> None:
    with op.batch_alter_table("pipeline_runs") as batch_op:
        batch_op.drop_column("enable_heartbeat")
