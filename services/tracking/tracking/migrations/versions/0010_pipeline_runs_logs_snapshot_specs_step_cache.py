"""pipeline runs as the zenml client records them: logs, snapshot specs, step cache keys

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 11:22:21.318214
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "logs",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("uri", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("source", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("artifact_store_id", sa.Uuid(), nullable=True),
        sa.Column("log_store_id", sa.Uuid(), nullable=True),
        sa.Column("pipeline_run_id", sa.Uuid(), nullable=True),
        sa.Column("step_run_id", sa.Uuid(), nullable=True),
        sa.Column("hook_invocation_id", sa.Uuid(), nullable=True),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("created", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["artifact_store_id"], ["stack_components.id"], ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["hook_invocation_id"], ["hook_invocations.id"], ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["log_store_id"], ["stack_components.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["pipeline_run_id"], ["pipeline_runs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["step_run_id"], ["step_runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_logs_pipeline_run_id"), "logs", ["pipeline_run_id"], unique=False)
    op.create_index(op.f("ix_logs_step_run_id"), "logs", ["step_run_id"], unique=False)
    op.create_index(op.f("ix_logs_user_id"), "logs", ["user_id"], unique=False)
    op.add_column(
        "pipeline_runs",
        sa.Column("orchestrator_environment", sa.JSON(), server_default="{}", nullable=False),
    )
    op.add_column("pipeline_runs", sa.Column("exception_info", sa.JSON(), nullable=True))
    op.add_column(
        "pipeline_snapshots",
        sa.Column("step_configurations", sa.JSON(), server_default="{}", nullable=False),
    )
    op.add_column("pipeline_snapshots", sa.Column("pipeline_spec", sa.JSON(), nullable=True))
    op.add_column(
        "pipeline_snapshots",
        sa.Column("client_environment", sa.JSON(), server_default="{}", nullable=False),
    )
    op.add_column(
        "pipeline_snapshots",
        sa.Column("client_version", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
    )
    op.add_column(
        "pipeline_snapshots",
        sa.Column("server_version", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
    )
    op.add_column(
        "pipeline_snapshots",
        sa.Column(
            "pipeline_version_hash", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True
        ),
    )
    op.add_column(
        "pipeline_snapshots",
        sa.Column("source_code", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    )
    op.add_column(
        "pipeline_snapshots",
        sa.Column("code_path", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    )
    op.add_column("pipeline_snapshots", sa.Column("build_id", sa.Uuid(), nullable=True))
    op.add_column("pipeline_snapshots", sa.Column("schedule_id", sa.Uuid(), nullable=True))
    op.add_column("pipeline_snapshots", sa.Column("template_id", sa.Uuid(), nullable=True))
    op.add_column("pipeline_snapshots", sa.Column("source_snapshot_id", sa.Uuid(), nullable=True))
    op.create_foreign_key(
        "pipeline_snapshots_build_id_fkey",
        "pipeline_snapshots",
        "pipeline_builds",
        ["build_id"],
        ["id"],
        ondelete="SET NULL",
    )
    op.create_foreign_key(
        "pipeline_snapshots_schedule_id_fkey",
        "pipeline_snapshots",
        "schedules",
        ["schedule_id"],
        ["id"],
        ondelete="SET NULL",
    )
    op.add_column(
        "step_runs",
        sa.Column("cache_key", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
    )
    op.add_column(
        "step_runs",
        sa.Column("cache_expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    )
    op.add_column(
        "step_runs",
        sa.Column("code_hash", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
    )
    op.add_column(
        "step_runs", sa.Column("docstring", sqlmodel.sql.sqltypes.AutoString(), nullable=True)
    )
    op.add_column(
        "step_runs", sa.Column("source_code", sqlmodel.sql.sqltypes.AutoString(), nullable=True)
    )
    op.add_column("step_runs", sa.Column("original_step_run_id", sa.Uuid(), nullable=True))
    op.add_column(
        "step_runs", sa.Column("parent_step_ids", sa.JSON(), server_default="[]", nullable=False)
    )
    op.add_column("step_runs", sa.Column("exception_info", sa.JSON(), nullable=True))
    op.create_index(op.f("ix_step_runs_created"), "step_runs", ["created"], unique=False)
    op.create_index(
        "ix_step_runs_project_cache_key", "step_runs", ["project_id", "cache_key"], unique=False
    )
    op.create_foreign_key(
        "step_runs_original_step_run_id_fkey",
        "step_runs",
        "step_runs",
        ["original_step_run_id"],
        ["id"],
        ondelete="SET NULL",
    )


def downgrade() -> None:
    op.drop_constraint("step_runs_original_step_run_id_fkey", "step_runs", type_="foreignkey")
    op.drop_index("ix_step_runs_project_cache_key", table_name="step_runs")
    op.drop_index(op.f("ix_step_runs_created"), table_name="step_runs")
    op.drop_column("step_runs", "exception_info")
    op.drop_column("step_runs", "parent_step_ids")
    op.drop_column("step_runs", "original_step_run_id")
    op.drop_column("step_runs", "source_code")
    op.drop_column("step_runs", "docstring")
    op.drop_column("step_runs", "code_hash")
    op.drop_column("step_runs", "cache_expires_at")
    op.drop_column("step_runs", "cache_key")
    op.drop_constraint(
        "pipeline_snapshots_schedule_id_fkey", "pipeline_snapshots", type_="foreignkey"
    )
    op.drop_constraint("pipeline_snapshots_build_id_fkey", "pipeline_snapshots", type_="foreignkey")
    op.drop_column("pipeline_snapshots", "source_snapshot_id")
    op.drop_column("pipeline_snapshots", "template_id")
    op.drop_column("pipeline_snapshots", "schedule_id")
    op.drop_column("pipeline_snapshots", "build_id")
    op.drop_column("pipeline_snapshots", "code_path")
    op.drop_column("pipeline_snapshots", "source_code")
    op.drop_column("pipeline_snapshots", "pipeline_version_hash")
    op.drop_column("pipeline_snapshots", "server_version")
    op.drop_column("pipeline_snapshots", "client_version")
    op.drop_column("pipeline_snapshots", "client_environment")
    op.drop_column("pipeline_snapshots", "pipeline_spec")
    op.drop_column("pipeline_snapshots", "step_configurations")
    op.drop_column("pipeline_runs", "exception_info")
    op.drop_column("pipeline_runs", "orchestrator_environment")
    op.drop_index(op.f("ix_logs_user_id"), table_name="logs")
    op.drop_index(op.f("ix_logs_step_run_id"), table_name="logs")
    op.drop_index(op.f("ix_logs_pipeline_run_id"), table_name="logs")
    op.drop_table("logs")
