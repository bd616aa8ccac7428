"""Custom flavors: the reference's /flavors create, update and delete

``custom_flavors`` holds the flavors registered through the API (the built-in ones are
code), unique by (type, name) as the reference's; ``config_schema`` is the JSON schema the
client validates a component's configuration with.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 23:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TEXT = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    op.create_table(
        "custom_flavors",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", _TEXT(length=255), nullable=False),
        sa.Column("type", _TEXT(length=32), nullable=False),
        sa.Column("display_name", _TEXT(length=255), nullable=True),
        sa.Column("source", _TEXT(length=255), nullable=False),
        sa.Column("config_schema", sa.JSON(), nullable=False),
        sa.Column("integration", _TEXT(length=255), nullable=True),
        sa.Column("connector_type", _TEXT(length=255), nullable=True),
        sa.Column("connector_resource_type", _TEXT(length=255), nullable=True),
        sa.Column("connector_resource_id_attr", _TEXT(length=255), nullable=True),
        sa.Column("logo_url", _TEXT(), nullable=True),
        sa.Column("docs_url", _TEXT(), nullable=True),
        sa.Column("sdk_docs_url", _TEXT(), nullable=True),
        sa.Column("is_custom", sa.Boolean(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("created", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("type", "name", name="uq_custom_flavors_type_name"),
    )
    op.create_index("ix_custom_flavors_created", "custom_flavors", ["created"])
    op.create_index("ix_custom_flavors_user_id", "custom_flavors", ["user_id"])


def downgrade() -> None:
    op.drop_table("custom_flavors")
