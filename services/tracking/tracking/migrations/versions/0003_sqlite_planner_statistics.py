"""SQLite query planner statistics for artifact versions

SQLite plans without statistics until ``ANALYZE`` runs, and then it cannot tell that a
project holds most versions while an artifact holds few: a list filtered by artifact would
walk the project's index. These rows state the shape we expect (few projects, many
artifacts, versions numbered per artifact), as SQLite's documentation allows; a later
``ANALYZE`` replaces them with measured ones. PostgreSQL gathers its own (autovacuum).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 15:10:00
"""

from collections.abc import Sequence

from alembic import op

from shared.migrations import sqlite_statistics

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (index, stat): rows in the index, then rows per distinct value of its leading columns.
STATISTICS = (
    (None, "1000000"),
    ("ix_artifact_versions_project_created", "1000000 100000 1 1"),
    ("ix_artifact_versions_project_type_created", "1000000 100000 20000 1"),
    ("ix_artifact_versions_artifact_created", "1000000 100 1 1"),
    ("ix_artifact_versions_artifact_number", "1000000 100 2"),
    ("ix_artifact_versions_artifact_store_id", "1000000 500000"),
    ("ix_artifact_versions_user_id", "1000000 100000"),
)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    # Creates sqlite_stat1 when it does not exist yet (cheap: the table is new or small).
    op.execute("ANALYZE artifact_versions")
    op.execute("DELETE FROM sqlite_stat1 WHERE tbl = 'artifact_versions'")
    sqlite_statistics(bind, "artifact_versions", STATISTICS)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    op.execute("DELETE FROM sqlite_stat1 WHERE tbl = 'artifact_versions'")
