"""The unfiltered artifact-versions list's total is the number PostgreSQL keeps per project
(triggers of migration 0008), not a count of every version: exact after every kind of
write, and what the list reports."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import httpx

from tests.tracking.artifact.support import Headers, new_project
from tests.tracking.artifact_version.support import (
    VERSIONS,
    Json,
    create_version,
    list_versions,
    version_body,
)
from tracking.settings import Settings


async def sql(settings: Settings, query: str, *args: Any) -> Any:
    """One value of ``query`` on tracking's database (a connection of its own)."""
    connection = await asyncpg.connect(settings.database_url.replace("+asyncpg", ""))
    try:
        return await connection.fetchval(query, *args)
    finally:
        await connection.close()


async def counts(settings: Settings, project: Json) -> tuple[int, int]:
    """(the kept number, a count of the rows) for ``project``."""
    project_id = uuid.UUID(project["id"])
    kept = await sql(
        settings,
        "SELECT coalesce(sum(versions), 0) FROM artifact_version_counts WHERE project_id = $1",
        project_id,
    )
    rows = await sql(
        settings, "SELECT count(*) FROM artifact_versions WHERE project_id = $1", project_id
    )
    return int(kept), int(rows)


async def test_the_kept_count_follows_every_kind_of_write(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_settings: Settings
) -> None:
    async def check(expected: int) -> None:
        assert await counts(tracking_settings, default_project) == (expected, expected)
        assert (await list_versions(tracking, auth))["total"] == expected

    await check(0)
    first = await create_version(tracking, auth, default_project)
    await create_version(tracking, auth, default_project)
    await check(2)
    batch = [version_body(default_project, f"batch-{i}") for i in range(5)]
    assert (await tracking.post(f"{VERSIONS}/batch", json=batch, headers=auth)).status_code == 200
    await check(7)
    assert (await tracking.delete(f"{VERSIONS}/{first['id']}", headers=auth)).status_code == 200
    await check(6)
    # A row written around the service (a restore, a bulk load) is counted too.
    await sql(
        tracking_settings,
        "INSERT INTO artifact_versions (id, project_id, artifact_id, version, version_number,"
        " type, uri, materializer, data_type, save_type, created, updated)"
        " SELECT gen_random_uuid(), project_id, artifact_id, 'sql', 99, type, uri,"
        " materializer, data_type, save_type, created, updated FROM artifact_versions"
        " LIMIT 1",
    )
    await check(7)
    pruned = await tracking.delete(VERSIONS, params={"project_name_or_id": "default"}, headers=auth)
    assert pruned.status_code == 200
    await check(0)


async def test_the_unfiltered_total_is_the_kept_number_and_a_filtered_one_is_counted(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_settings: Settings
) -> None:
    await create_version(tracking, auth, default_project, "a")
    await create_version(tracking, auth, default_project, "b")
    await sql(
        tracking_settings,
        "UPDATE artifact_version_counts SET versions = versions + 40 WHERE project_id = $1",
        uuid.UUID(default_project["id"]),
    )
    assert (await list_versions(tracking, auth))["total"] == 42
    assert (await list_versions(tracking, auth, ("artifact", "a")))["total"] == 1


async def test_concurrent_creates_are_each_counted_once(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_settings: Settings
) -> None:
    await asyncio.gather(
        *(create_version(tracking, auth, default_project, f"c-{i}") for i in range(24))
    )
    assert await counts(tracking_settings, default_project) == (24, 24)


async def test_versions_deleted_by_a_cascade_leave_the_count(
    tracking: httpx.AsyncClient, auth: Headers, tracking_settings: Settings
) -> None:
    other = await new_project(tracking, auth, "other")
    await create_version(tracking, auth, other)
    await create_version(tracking, auth, other)
    assert await counts(tracking_settings, other) == (2, 2)
    # The project's row goes; its artifacts and versions go with it (ON DELETE CASCADE).
    await sql(tracking_settings, "DELETE FROM projects WHERE id = $1", uuid.UUID(other["id"]))
    assert await counts(tracking_settings, other) == (0, 0)
