"""the run page: dynamic steps' configurations, step heartbeats, pipelines by latest run

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27 15:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("step_runs", sa.Column("dynamic_config", sa.JSON(), nullable=True))
    op.add_column("step_runs", sa.Column("dag_config", sa.JSON(), nullable=True))
    op.add_column(
        "step_runs",
        sa.Column("latest_heartbeat", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    )
    op.create_index(
        "ix_pipeline_runs_pipeline_created",
        "pipeline_runs",
        ["pipeline_id", "created"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_pipeline_runs_pipeline_created", table_name="pipeline_runs")
    op.drop_column("step_runs", "latest_heartbeat")
    op.drop_column("step_runs", "dag_config")
    op.drop_column("step_runs", "dynamic_config")
