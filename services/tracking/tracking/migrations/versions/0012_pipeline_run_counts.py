"""Each project's number of pipeline runs, kept by triggers

The dashboard's home page shows a project's run count (``GET /projects/{id}/statistics``),
which as a count of every run of the project grows with them. ``pipeline_run_counts``
keeps it as ``artifact_version_counts`` (migration 0008) keeps versions: updated in the
same transaction as every insert and delete of ``pipeline_runs`` by statement triggers
(a pipeline's or a project's cascade included), summed over at most 16 slots (one per
connection's backend pid modulo 16, so concurrent runs do not queue behind one row).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27 15:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ADD = """
CREATE FUNCTION pipeline_run_counts_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pipeline_run_counts (project_id, slot, runs)
    SELECT project_id, pg_backend_pid() % 16, count(*)
    FROM inserted GROUP BY project_id ORDER BY project_id
    ON CONFLICT (project_id, slot)
    DO UPDATE SET runs = pipeline_run_counts.runs + EXCLUDED.runs;
    RETURN NULL;
END
$$
"""

REMOVE = """
CREATE FUNCTION pipeline_run_counts_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pipeline_run_counts (project_id, slot, runs)
    SELECT project_id, pg_backend_pid() % 16, -count(*)
    FROM deleted GROUP BY project_id ORDER BY project_id
    ON CONFLICT (project_id, slot)
    DO UPDATE SET runs = pipeline_run_counts.runs + EXCLUDED.runs;
    RETURN NULL;
END
$$
"""


def upgrade() -> None:
    op.create_table(
        "pipeline_run_counts",
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=False),
        sa.Column("runs", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("project_id", "slot"),
    )
    # Runs written meanwhile by a replica still on the previous revision wait here, so the
    # backfill and the triggers see the same rows.
    op.execute("LOCK TABLE pipeline_runs IN SHARE MODE")
    op.execute(
        "INSERT INTO pipeline_run_counts (project_id, slot, runs) "
        "SELECT project_id, 0, count(*) FROM pipeline_runs GROUP BY project_id"
    )
    op.execute(ADD)
    op.execute(REMOVE)
    op.execute(
        "CREATE TRIGGER pipeline_run_counts_insert AFTER INSERT ON pipeline_runs "
        "REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT "
        "EXECUTE FUNCTION pipeline_run_counts_add()"
    )
    op.execute(
        "CREATE TRIGGER pipeline_run_counts_delete AFTER DELETE ON pipeline_runs "
        "REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT "
        "EXECUTE FUNCTION pipeline_run_counts_remove()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER pipeline_run_counts_delete ON pipeline_runs")
    op.execute("DROP TRIGGER pipeline_run_counts_insert ON pipeline_runs")
    op.execute("DROP FUNCTION pipeline_run_counts_remove()")
    op.execute("DROP FUNCTION pipeline_run_counts_add()")
    op.drop_table("pipeline_run_counts")
