"""pipeline builds, triggers and their snapshots, hook invocations and their outputs

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 11:20:41.527786
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "triggers",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("is_archived", sa.Boolean(), nullable=False),
        sa.Column("type", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("flavor", sqlmodel.sql.sqltypes.AutoString(length=50), nullable=False),
        sa.Column("concurrency", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("configuration", sa.JSON(), nullable=False),
        sa.Column("next_occurrence", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("source_entity", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.Column("target_events", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("created", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("project_id", "name", name="uq_triggers_project_name"),
    )
    op.create_index(op.f("ix_triggers_created"), "triggers", ["created"], unique=False)
    op.create_index(op.f("ix_triggers_name"), "triggers", ["name"], unique=False)
    op.create_index(op.f("ix_triggers_user_id"), "triggers", ["user_id"], unique=False)
    op.create_table(
        "pipeline_builds",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("stack_id", sa.Uuid(), nullable=True),
        sa.Column("pipeline_id", sa.Uuid(), nullable=True),
        sa.Column("images", sa.JSON(), nullable=False),
        sa.Column("is_local", sa.Boolean(), nullable=False),
        sa.Column("contains_code", sa.Boolean(), nullable=False),
        sa.Column("zenml_version", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.Column("python_version", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.Column("checksum", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.Column("stack_checksum", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.Column("duration", sa.Integer(), nullable=True),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("created", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["pipeline_id"], ["pipelines.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["stack_id"], ["stacks.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_pipeline_builds_project_created",
        "pipeline_builds",
        ["project_id", "created"],
        unique=False,
    )
    op.create_index(
        op.f("ix_pipeline_builds_user_id"), "pipeline_builds", ["user_id"], unique=False
    )
    op.create_table(
        "trigger_snapshots",
        sa.Column("trigger_id", sa.Uuid(), nullable=False),
        sa.Column("snapshot_id", sa.Uuid(), nullable=False),
        sa.Column("created", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["snapshot_id"], ["pipeline_snapshots.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["trigger_id"], ["triggers.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("trigger_id", "snapshot_id"),
    )
    op.create_table(
        "hook_invocations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("pipeline_run_id", sa.Uuid(), nullable=False),
        sa.Column("step_run_id", sa.Uuid(), nullable=True),
        sa.Column("hook_type", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("start_time", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("end_time", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("source", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("exception_info", sa.JSON(), nullable=True),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("created", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["pipeline_run_id"], ["pipeline_runs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["step_run_id"], ["step_runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        op.f("ix_hook_invocations_pipeline_run_id"),
        "hook_invocations",
        ["pipeline_run_id"],
        unique=False,
    )
    op.create_index(
        "ix_hook_invocations_project_created",
        "hook_invocations",
        ["project_id", "created"],
        unique=False,
    )
    op.create_index(
        op.f("ix_hook_invocations_step_run_id"), "hook_invocations", ["step_run_id"], unique=False
    )
    op.create_index(
        op.f("ix_hook_invocations_user_id"), "hook_invocations", ["user_id"], unique=False
    )
    op.create_table(
        "hook_invocation_outputs",
        sa.Column("hook_invocation_id", sa.Uuid(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("artifact_version_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["artifact_version_id"], ["artifact_versions.id"], ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["hook_invocation_id"], ["hook_invocations.id"], ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("hook_invocation_id", "name", "artifact_version_id"),
    )
    op.create_index(
        "ix_hook_invocation_outputs_version",
        "hook_invocation_outputs",
        ["artifact_version_id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_hook_invocation_outputs_version", table_name="hook_invocation_outputs")
    op.drop_table("hook_invocation_outputs")
    op.drop_index(op.f("ix_hook_invocations_user_id"), table_name="hook_invocations")
    op.drop_index(op.f("ix_hook_invocations_step_run_id"), table_name="hook_invocations")
    op.drop_index("ix_hook_invocations_project_created", table_name="hook_invocations")
    op.drop_index(op.f("ix_hook_invocations_pipeline_run_id"), table_name="hook_invocations")
    op.drop_table("hook_invocations")
    op.drop_table("trigger_snapshots")
    op.drop_index(op.f("ix_pipeline_builds_user_id"), table_name="pipeline_builds")
    op.drop_index("ix_pipeline_builds_project_created", table_name="pipeline_builds")
    op.drop_table("pipeline_builds")
    op.drop_index(op.f("ix_triggers_user_id"), table_name="triggers")
    op.drop_index(op.f("ix_triggers_name"), table_name="triggers")
    op.drop_index(op.f("ix_triggers_created"), table_name="triggers")
    op.drop_table("triggers")
