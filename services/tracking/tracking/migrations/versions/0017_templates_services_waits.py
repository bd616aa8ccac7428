"""Run templates, run wait conditions, services and curated visualizations: the
reference's /run_templates, /run_wait_conditions, /services and /curated_visualizations

``run_templates`` names a pipeline snapshot (its source, cleared when the snapshot goes);
``pipeline_snapshots.template_id`` (snapshots made from a template, no foreign key, as the
reference's) gets an index: a template's latest run is found through it.
``run_wait_conditions``: a run's conditions (unique by name in the run, one pending at a
time), their JSON schema and result, the poller's lease, who resolved them and when.
``services``: what clients record of their services; ``config`` is the configuration's
JSON text, indexed (a configuration is used by one service).
``curated_visualizations``: an artifact visualization shown on a resource's page, once
per resource, at an optional display order.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 20:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "run_templates",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("description", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("hidden", sa.Boolean(), nullable=False),
        sa.Column("source_snapshot_id", sa.Uuid(), nullable=True),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("created", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["source_snapshot_id"], ["pipeline_snapshots.id"], ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("project_id", "name", name="uq_run_templates_project_name"),
    )
    op.create_index("ix_run_templates_created", "run_templates", ["created"])
    op.create_index("ix_run_templates_user_id", "run_templates", ["user_id"])
    op.create_index("ix_run_templates_source_snapshot_id", "run_templates", ["source_snapshot_id"])
    op.create_index("ix_pipeline_snapshots_template_id", "pipeline_snapshots", ["template_id"])
    op.create_table(
        "run_wait_conditions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("type", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("question", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("data_schema", sa.JSON(), nullable=True),
        sa.Column("resolution", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column("result", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("last_polled_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column(
            "poller_instance_id", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True
        ),
        sa.Column("poller_lease_expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("resolved_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("resolved_by_user_id", sa.Uuid(), nullable=True),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("created", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["pipeline_runs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "name", name="uq_run_wait_conditions_run_name"),
        sa.CheckConstraint(
            "(status != 'resolved') OR (resolution IS NOT NULL)",
            name="ck_run_wait_conditions_resolved_resolution",
        ),
    )
    op.create_index(
        "ix_run_wait_conditions_run_status", "run_wait_conditions", ["run_id", "status"]
    )
    op.create_index(
        "ix_run_wait_conditions_project_created", "run_wait_conditions", ["project_id", "created"]
    )
    op.create_index("ix_run_wait_conditions_user_id", "run_wait_conditions", ["user_id"])
    op.create_table(
        "services",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("service_type", sa.JSON(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("flavor", sa.Text(), nullable=False),
        sa.Column("service_source", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("admin_state", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column("state", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column("labels", sa.JSON(), nullable=True),
        sa.Column("config", sa.Text(), nullable=False),
        sa.Column("status", sa.JSON(), nullable=True),
        sa.Column("endpoint", sa.JSON(), nullable=True),
        sa.Column("prediction_url", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("health_check_url", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("pipeline_name", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("pipeline_step_name", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("model_version_id", sa.Uuid(), nullable=True),
        sa.Column("pipeline_run_id", sa.Uuid(), nullable=True),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("created", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["pipeline_run_id"], ["pipeline_runs.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_services_config", "services", ["config"])
    op.create_index("ix_services_created", "services", ["created"])
    op.create_index("ix_services_pipeline_run_id", "services", ["pipeline_run_id"])
    op.create_index("ix_services_user_id", "services", ["user_id"])
    op.create_table(
        "curated_visualizations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("artifact_visualization_id", sa.Uuid(), nullable=False),
        sa.Column("display_name", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("display_order", sa.Integer(), nullable=True),
        sa.Column("layout_size", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("resource_id", sa.Uuid(), nullable=False),
        sa.Column("resource_type", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("created", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["artifact_visualization_id"], ["artifact_visualizations.id"], ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "artifact_visualization_id",
            "resource_id",
            "resource_type",
            name="uq_curated_visualizations_resource_link",
        ),
    )
    op.create_index(
        "ix_curated_visualizations_resource",
        "curated_visualizations",
        ["resource_type", "resource_id"],
    )


def downgrade() -> None:
    op.drop_table("curated_visualizations")
    op.drop_table("services")
    op.drop_table("run_wait_conditions")
    op.drop_index("ix_pipeline_snapshots_template_id", table_name="pipeline_snapshots")
    op.drop_table("run_templates")
