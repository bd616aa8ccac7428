"""A step's heartbeat threshold: the reference's StepRunResponseBody.heartbeat_threshold

``step_runs.heartbeat_threshold``: the minutes a step may go without a heartbeat (its
configuration's ``heartbeat_healthy_threshold``) while its heartbeats are watched, set
when the step is created and cleared by its run's ``disable_heartbeat``. A step's
heartbeat answers ``heartbeat_enabled`` from it. Steps created before this revision have
none (their heartbeats answer ``heartbeat_enabled: false``, as the reference's steps of
that time did).

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-28 02:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("step_runs", sa.Column("heartbeat_threshold", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("step_runs") as batch_op:
        batch_op.drop_column("heartbeat_threshold")
