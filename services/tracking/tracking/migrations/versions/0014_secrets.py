"""Secrets: the reference's /secrets, values encrypted at rest

``secrets.encrypted_values`` is one Fernet token (COMPONENT_SECRET_KEYS) of the secret's
values as a JSON object. A public name is unique among public secrets, a private one among
its owner's private secrets (partial unique indexes, as the reference's scoping rules).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 17:15:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "secrets",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("private", sa.Boolean(), nullable=False),
        sa.Column("encrypted_values", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("created", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_secrets_name", "secrets", ["name"])
    op.create_index("ix_secrets_user_id", "secrets", ["user_id"])
    op.create_index("ix_secrets_created_id", "secrets", ["created", "id"])
    op.create_index(
        "uq_secrets_public_name",
        "secrets",
        ["name"],
        unique=True,
        postgresql_where=sa.text("NOT private"),
    )
    op.create_index(
        "uq_secrets_private_name",
        "secrets",
        ["user_id", "name"],
        unique=True,
        postgresql_where=sa.text("private"),
    )


def downgrade() -> None:
    op.drop_table("secrets")
