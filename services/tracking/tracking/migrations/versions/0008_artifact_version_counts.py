"""Each project's number of artifact versions, kept by triggers

The unfiltered artifact-versions list's exact ``total`` was a count of every version of the
project (~90 ms at 1,000,000 versions, growing with them). ``artifact_version_counts``
keeps that number, updated in the same transaction as every insert and delete of
``artifact_versions`` by statement triggers (one upsert per statement, whatever its rows:
a batch, a prune, a project's cascade), so the total is exact and a sum of at most
``SLOTS`` rows. Each database connection adds to its own slot (its backend pid modulo
``SLOTS``), so concurrent creates do not queue behind one row, and a transaction only ever
holds its own slot's row per project (no lock-order cycles between slots).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 10:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Slots per project (the modulus of the backend pid in the functions below).
SLOTS = 16

ADD = """
CREATE FUNCTION artifact_version_counts_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO artifact_version_counts (project_id, slot, versions)
    SELECT project_id, pg_backend_pid() % 16, count(*)
    FROM inserted GROUP BY project_id ORDER BY project_id
    ON CONFLICT (project_id, slot)
    DO UPDATE SET versions = artifact_version_counts.versions + EXCLUDED.versions;
    RETURN NULL;
END
$$
"""

REMOVE = """
CREATE FUNCTION artifact_version_counts_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO artifact_version_counts (project_id, slot, versions)
    SELECT project_id, pg_backend_pid() % 16, -count(*)
    FROM deleted GROUP BY project_id ORDER BY project_id
    ON CONFLICT (project_id, slot)
    DO UPDATE SET versions = artifact_version_counts.versions + EXCLUDED.versions;
    RETURN NULL;
END
$$
"""


def upgrade() -> None:
    op.create_table(
        "artifact_version_counts",
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=False),
        sa.Column("versions", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("project_id", "slot"),
    )
    # Versions written meanwhile by a replica still on the previous revision wait here, so
    # the backfill and the triggers see the same rows.
    op.execute("LOCK TABLE artifact_versions IN SHARE MODE")
    op.execute(
        "INSERT INTO artifact_version_counts (project_id, slot, versions) "
        "SELECT project_id, 0, count(*) FROM artifact_versions GROUP BY project_id"
    )
    op.execute(ADD)
    op.execute(REMOVE)
    op.execute(
        "CREATE TRIGGER artifact_version_counts_insert AFTER INSERT ON artifact_versions "
        "REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT "
        "EXECUTE FUNCTION artifact_version_counts_add()"
    )
    op.execute(
        "CREATE TRIGGER artifact_version_counts_delete AFTER DELETE ON artifact_versions "
        "REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT "
        "EXECUTE FUNCTION artifact_version_counts_remove()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER artifact_version_counts_delete ON artifact_versions")
    op.execute("DROP TRIGGER artifact_version_counts_insert ON artifact_versions")
    op.execute("DROP FUNCTION artifact_version_counts_remove()")
    op.execute("DROP FUNCTION artifact_version_counts_add()")
    op.drop_table("artifact_version_counts")
