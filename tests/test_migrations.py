"""Each service's migrations create exactly the tables its models declare, and running them
again changes nothing.

``SQLModel.metadata`` is global: once every service's models are imported it holds all
their tables, so each service is compared against a copy holding only its own.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterable
from typing import Any

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import MetaData, Table, inspect, text
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel
from sqlmodel.main import default_registry

from shared.db import create_engine
from shared.migrations import pending_changes, upgrade
from shared.revisions import at_head, declared_head, migrate
from tests.support.databases import SERVICES, migrations_of


def tables_by_package() -> dict[str, list[Table]]:
    """Every table of ``SQLModel.metadata`` under the top-level package of its model."""
    owned: dict[str, list[Table]] = {}
    for mapper in default_registry.mappers:
        table = mapper.local_table
        if isinstance(table, Table) and table.metadata is SQLModel.metadata:
            owned.setdefault(mapper.class_.__module__.split(".")[0], []).append(table)
    return owned


def metadata_of(tables: Iterable[Table]) -> MetaData:
    metadata = MetaData(naming_convention=SQLModel.metadata.naming_convention)
    for table in tables:
        table.to_metadata(metadata)
    return metadata


def schema_snapshot(connection: Connection) -> dict[str, Any]:
    inspector = inspect(connection)
    return {
        name: (
            [(c["name"], str(c["type"]), c["nullable"]) for c in inspector.get_columns(name)],
            sorted(str(i["name"]) for i in inspector.get_indexes(name)),
        )
        for name in sorted(inspector.get_table_names())
    }


def test_every_model_table_belongs_to_a_service():
    for package in SERVICES:
        migrations_of(package)
    owned = tables_by_package()
    mapped = {table.name for tables in owned.values() for table in tables}
    assert set(SQLModel.metadata.tables) - mapped == set(), "tables without a model class"
    assert set(owned) - {*SERVICES, "tests"} == set(), "tables outside the service packages"


@pytest.mark.parametrize("package", SERVICES)
async def test_migrations_create_exactly_what_the_models_declare(package, database_url):
    location = migrations_of(package)
    expected = metadata_of(tables_by_package().get(package, []))
    engine = create_engine(database_url)
    try:
        await upgrade(engine, location, lock_name=f"{package}-migrations")
        async with engine.connect() as conn:
            diffs = await conn.run_sync(pending_changes, expected)
            tables = set(await conn.run_sync(lambda c: inspect(c).get_table_names()))
    finally:
        await engine.dispose()
    assert diffs == []
    assert tables == {*expected.tables, "alembic_version"}


@pytest.mark.parametrize("package", SERVICES)
async def test_running_migrations_twice_is_a_no_op(package, database_url):
    location = migrations_of(package)
    engine = create_engine(database_url)
    try:
        await upgrade(engine, location, lock_name=f"{package}-migrations")
        async with engine.connect() as conn:
            before = await conn.run_sync(schema_snapshot)
            version = (await conn.execute(text("SELECT * FROM alembic_version"))).all()
        await upgrade(engine, location, lock_name=f"{package}-migrations")
        async with engine.connect() as conn:
            after = await conn.run_sync(schema_snapshot)
            version_after = (await conn.execute(text("SELECT * FROM alembic_version"))).all()
    finally:
        await engine.dispose()
    assert after == before
    assert version_after == version


async def test_concurrent_upgrades_take_turns(database_url):
    """Replicas (or uvicorn workers) starting together all run ``upgrade``."""
    location = migrations_of("identity")
    engines = [create_engine(database_url) for _ in range(3)]
    try:
        await asyncio.gather(
            *(upgrade(engine, location, lock_name="identity-migrations") for engine in engines)
        )
        async with engines[0].connect() as conn:
            diffs = await conn.run_sync(
                pending_changes, metadata_of(tables_by_package()["identity"])
            )
    finally:
        for engine in engines:
            await engine.dispose()
    assert diffs == []


BROKEN_REVISION = """
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table("scratch_first", sa.Column("id", sa.Integer, primary_key=True))
    raise RuntimeError("migration failed halfway")


def downgrade():
    pass
"""


async def test_a_failing_migration_leaves_no_partial_schema(database_url, tmp_path):
    location = tmp_path / "migrations"
    (location / "versions").mkdir(parents=True)
    (location / "env.py").write_text(
        "from sqlalchemy import MetaData\n"
        "from shared.migrations import run_env\n"
        "run_env(MetaData())\n"
    )
    (location / "versions" / "0001_broken.py").write_text(BROKEN_REVISION)
    engine = create_engine(database_url)
    try:
        with pytest.raises(RuntimeError, match="failed halfway"):
            await upgrade(engine, location, lock_name="scratch-migrations")
        async with engine.connect() as conn:
            tables = await conn.run_sync(lambda c: inspect(c).get_table_names())
    finally:
        await engine.dispose()
    assert tables == []


@pytest.mark.parametrize("package", SERVICES)
def test_the_head_read_without_alembic_is_alembics(package):
    location = migrations_of(package)
    assert declared_head(location) == ScriptDirectory(str(location)).get_current_head()


def test_a_history_that_is_not_one_line_has_no_declared_head(tmp_path):
    versions = tmp_path / "versions"
    versions.mkdir()
    for name, parent in (("0001", None), ("0002", "0001"), ("0003", "0001")):
        (versions / f"{name}.py").write_text(f"revision = {name!r}\ndown_revision = {parent!r}\n")
    assert declared_head(tmp_path) is None  # two heads: alembic decides


def test_the_declared_head_follows_revision_files_changed_or_added(tmp_path):
    versions = tmp_path / "versions"
    versions.mkdir()
    first, second = versions / "0001.py", versions / "0002.py"
    first.write_text("revision = '0001'\ndown_revision = None\n")
    second.write_text("revision = '0002'\ndown_revision = '0001'\n")
    assert declared_head(tmp_path) == "0002"
    second.write_text("revision = '0002b'\ndown_revision = '0001'\n")  # read again
    assert declared_head(tmp_path) == "0002b"
    (versions / "0003.py").write_text("revision = '0003'\ndown_revision = '0002b'\n")
    assert declared_head(tmp_path) == "0003"


async def test_at_head_only_once_migrated(database_url):
    location = migrations_of("webhooks")
    engine = create_engine(database_url)
    try:
        assert not await at_head(engine, location)  # no alembic_version yet
        await upgrade(engine, location, lock_name="webhooks-migrations")
        assert await at_head(engine, location)
        async with engine.begin() as conn:
            await conn.execute(text("UPDATE alembic_version SET version_num = '0001'"))
        assert not await at_head(engine, location)
    finally:
        await engine.dispose()


async def test_a_service_migrates_in_a_child_process_and_never_imports_alembic(database_url):
    """alembic's ~8.5 MB stay out of every service process: behind its head, the database
    is upgraded by a child process; at head, nothing runs."""
    location = migrations_of("webhooks")
    script = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from shared.db import create_engine\n"
        "from shared.revisions import at_head, migrate\n"
        "async def main(url, location):\n"
        "    engine = create_engine(url)\n"
        "    try:\n"
        "        for _ in range(2):  # behind its head, then at it\n"
        "            await migrate(engine, url, location, lock_name='webhooks-migrations')\n"
        "        print(await at_head(engine, location), 'alembic' in sys.modules)\n"
        "    finally:\n"
        "        await engine.dispose()\n"
        "asyncio.run(main(sys.argv[1], Path(sys.argv[2])))\n"
    )
    out = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", script, database_url, str(location)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"], out.stderr
    assert out.stderr.count("Running upgrade") == 3  # webhooks' three revisions, once


async def test_a_failing_child_migration_stops_the_start(database_url, tmp_path):
    versions = tmp_path / "versions"
    versions.mkdir()
    (versions / "0001_broken.py").write_text(BROKEN_REVISION)
    (tmp_path / "env.py").write_text(
        "from sqlalchemy import MetaData\nfrom shared.migrations import run_env\n"
        "run_env(MetaData())\n"
    )
    engine = create_engine(database_url)
    try:
        with pytest.raises(RuntimeError, match="failed"):
            await migrate(engine, database_url, tmp_path, lock_name="broken-migrations")
    finally:
        await engine.dispose()
