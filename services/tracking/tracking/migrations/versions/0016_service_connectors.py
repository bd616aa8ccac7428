"""Service connectors: the reference's /service_connectors, credentials encrypted at rest

``service_connectors.encrypted_secrets`` is one Fernet token (COMPONENT_SECRET_KEYS) of
the connector's secret configuration fields as a JSON object; ``configuration`` holds the
others. Names are unique, as on the reference.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27 20:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "service_connectors",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("connector_type", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("auth_method", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("resource_types", sa.JSON(), nullable=False),
        sa.Column("resource_id", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.Column("supports_instances", sa.Boolean(), nullable=False),
        sa.Column("configuration", sa.JSON(), nullable=False),
        sa.Column("encrypted_secrets", sa.Text(), nullable=True),
        sa.Column("expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("expires_skew_tolerance", sa.Integer(), nullable=True),
        sa.Column("expiration_seconds", sa.Integer(), nullable=True),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("created", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_service_connectors_name", "service_connectors", ["name"], unique=True)
    op.create_index(
        "ix_service_connectors_connector_type", "service_connectors", ["connector_type"]
    )
    op.create_index("ix_service_connectors_user_id", "service_connectors", ["user_id"])
    op.add_column("stack_components", sa.Column("connector_id", sa.Uuid(), nullable=True))
    op.create_index("ix_stack_components_connector_id", "stack_components", ["connector_id"])
    op.create_foreign_key(
        "stack_components_connector_id_fkey",
        "stack_components",
        "service_connectors",
        ["connector_id"],
        ["id"],
    )


def downgrade() -> None:
    op.drop_constraint("stack_components_connector_id_fkey", "stack_components")
    op.drop_index("ix_stack_components_connector_id", "stack_components")
    op.drop_column("stack_components", "connector_id")
    op.drop_table("service_connectors")
