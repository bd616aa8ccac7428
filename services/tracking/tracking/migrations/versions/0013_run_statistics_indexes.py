"""run statistics: the trigger of a run, and the indexes the onboarding checklist and the
statistics read

``pipeline_runs.trigger_id`` records the trigger whose execution asked for the run (the
run statistics group by it). ``pipeline_snapshots.stack_id`` and
``pipeline_runs.snapshot_id`` let the onboarding checklist read only the snapshots of
remote stacks and their runs, instead of every snapshot and run (a snapshot's deletion
finds its runs by the same index). ``(project_id, created, id)`` pages a project's runs in
the runs list's order: with only ``created`` indexed, a project whose runs are older than
another's walks the other's newer runs first (every one of them when it is small).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27 17:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("pipeline_runs", sa.Column("trigger_id", sa.Uuid(), nullable=True))
    op.create_index("ix_pipeline_snapshots_stack_id", "pipeline_snapshots", ["stack_id"])
    op.create_index("ix_pipeline_runs_snapshot_id", "pipeline_runs", ["snapshot_id"])
    op.create_index(
        "ix_pipeline_runs_project_created", "pipeline_runs", ["project_id", "created", "id"]
    )


def downgrade() -> None:
    op.drop_index("ix_pipeline_runs_project_created", table_name="pipeline_runs")
    op.drop_index("ix_pipeline_runs_snapshot_id", table_name="pipeline_runs")
    op.drop_index("ix_pipeline_snapshots_stack_id", table_name="pipeline_snapshots")
    op.drop_column("pipeline_runs", "trigger_id")
