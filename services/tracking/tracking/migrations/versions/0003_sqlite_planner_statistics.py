"""SQLite query planner statistics for artifact versions (none left to write)

This revision wrote SQLite's planner statistics; PostgreSQL gathers its own (autovacuum),
and tracking runs on PostgreSQL only. It stays, empty, so that the revision ids of existing
databases keep their meaning.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 15:10:00
"""

from collections.abc import Sequence

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
