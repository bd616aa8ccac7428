"""Models: the reference's /models, /model_versions and their links to artifact versions
and runs; runs and step runs point at their model version

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27 20:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TEXTS = ("license", "description", "audience", "use_cases", "limitations", "trade_offs", "ethics")


def _stamps() -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column("created", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "models",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        *[sa.Column(name, sa.Text(), nullable=True) for name in _TEXTS],
        sa.Column("save_models_to_registry", sa.Boolean(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        *_stamps(),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("project_id", "name", name="uq_models_project_name"),
    )
    op.create_index("ix_models_user_id", "models", ["user_id"])
    op.create_index("ix_models_project_created", "models", ["project_id", "created", "id"])
    op.create_table(
        "model_versions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("model_id", sa.Uuid(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("stage", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.Column("producer_run_id_if_numeric", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        *_stamps(),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["model_id"], ["models.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("model_id", "number", name="uq_model_versions_model_number"),
        sa.UniqueConstraint("model_id", "name", name="uq_model_versions_model_name"),
        sa.UniqueConstraint(
            "model_id", "producer_run_id_if_numeric", name="uq_model_versions_model_producer"
        ),
    )
    op.create_index("ix_model_versions_user_id", "model_versions", ["user_id"])
    op.create_index(
        "ix_model_versions_project_created", "model_versions", ["project_id", "created", "id"]
    )
    op.create_table(
        "model_version_artifacts",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("model_version_id", sa.Uuid(), nullable=False),
        sa.Column("artifact_version_id", sa.Uuid(), nullable=False),
        *_stamps(),
        sa.ForeignKeyConstraint(["model_version_id"], ["model_versions.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["artifact_version_id"], ["artifact_versions.id"], ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "model_version_id", "artifact_version_id", name="uq_model_version_artifacts_link"
        ),
    )
    op.create_index(
        "ix_model_version_artifacts_artifact_version",
        "model_version_artifacts",
        ["artifact_version_id"],
    )
    op.create_table(
        "model_version_runs",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("model_version_id", sa.Uuid(), nullable=False),
        sa.Column("pipeline_run_id", sa.Uuid(), nullable=False),
        *_stamps(),
        sa.ForeignKeyConstraint(["model_version_id"], ["model_versions.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["pipeline_run_id"], ["pipeline_runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "model_version_id", "pipeline_run_id", name="uq_model_version_runs_link"
        ),
    )
    op.create_index("ix_model_version_runs_run", "model_version_runs", ["pipeline_run_id"])
    for table in ("pipeline_runs", "step_runs"):
        op.add_column(table, sa.Column("model_version_id", sa.Uuid(), nullable=True))
        op.create_foreign_key(
            f"{table}_model_version_id_fkey",
            table,
            "model_versions",
            ["model_version_id"],
            ["id"],
            ondelete="SET NULL",
        )
        op.create_index(f"ix_{table}_model_version_id", table, ["model_version_id"])


def downgrade() -> None:
    for table in ("pipeline_runs", "step_runs"):
        op.drop_index(f"ix_{table}_model_version_id", table)
        op.drop_constraint(f"{table}_model_version_id_fkey", table, type_="foreignkey")
        op.drop_column(table, "model_version_id")
    op.drop_table("model_version_runs")
    op.drop_table("model_version_artifacts")
    op.drop_table("model_versions")
    op.drop_table("models")
