"""Stack components' secret fields, encrypted apart from their configuration

``stack_components.encrypted_secrets`` holds an s3 artifact store's ``key``, ``secret`` and
``token`` (any flavor's secret fields), each a Fernet token under COMPONENT_SECRET_KEYS.
Existing rows (local stores, orchestrators, deployers) have none: ``{}``.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "stack_components",
        sa.Column("encrypted_secrets", sa.JSON(), nullable=False, server_default="{}"),
    )


def downgrade() -> None:
    op.drop_column("stack_components", "encrypted_secrets")
