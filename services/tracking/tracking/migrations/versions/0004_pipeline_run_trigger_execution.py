"""pipeline runs: the trigger execution that asked for a snapshot run

A run requested through ``POST /pipeline_snapshots/{id}/runs`` keeps the trigger execution
that asked for it (at most one run per execution) and the reference's trigger execution info.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 20:03:45.302184
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("pipeline_runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("trigger_execution_id", sa.Uuid(), nullable=True))
        batch_op.add_column(sa.Column("trigger_execution_info", sa.JSON(), nullable=True))
        batch_op.create_unique_constraint(
            "uq_pipeline_runs_trigger_execution", ["trigger_execution_id"]
        )


def downgrade() -> None:
    with op.batch_alter_table("pipeline_runs", schema=None) as batch_op:
        batch_op.drop_constraint("uq_pipeline_runs_trigger_execution", type_="unique")
        batch_op.drop_column("trigger_execution_info")
        batch_op.drop_column("trigger_execution_id")
