"""Lists of an artifact's versions count their matches and find their page in an index
that holds every column they filter and sort on, not by reading the project's (or the
artifact's) rows."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import event, insert, text
from sqlalchemy.ext.asyncio import AsyncEngine

from shared.db import utcnow
from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import VERSIONS, Json, create_version
from tracking.models import Artifact, ArtifactVersion

ARTIFACTS = 40
PER_ARTIFACT = 50


async def _fill(engine: AsyncEngine, project_id: str) -> None:
    """``ARTIFACTS`` artifacts with ``PER_ARTIFACT`` versions each, written in bulk; each
    artifact's versions created one second apart, in the order of their numbers."""
    now = utcnow()
    project = uuid.UUID(project_id)
    artifacts = [
        {"id": uuid.uuid4(), "project_id": project, "name": f"bulk-{a}", "created": now}
        for a in range(ARTIFACTS)
    ]
    versions = [
        {
            "id": uuid.uuid4(),
            "project_id": project,
            "artifact_id": artifact["id"],
            "version": str(number),
            "version_number": number,
            "type": "ModelArtifact" if number % 2 else "DataArtifact",
            "uri": "/x",
            "materializer": "{}",
            "data_type": "{}",
            "save_type": "external",
            "created": now + dt.timedelta(seconds=number),
            "updated": now,
        }
        for artifact in artifacts
        for number in range(1, PER_ARTIFACT + 1)
    ]
    async with engine.begin() as conn:
        await conn.execute(
            insert(Artifact.__table__),  # type: ignore[attr-defined]
            [{**a, "has_custom_name": False, "updated": now} for a in artifacts],
        )
        await conn.execute(insert(ArtifactVersion.__table__), versions)  # type: ignore[attr-defined]
        await conn.execute(text("ANALYZE artifact_versions"))
        await conn.execute(text("ANALYZE artifacts"))


async def _plans(
    tracking: httpx.AsyncClient, auth: Headers, engine: AsyncEngine, params: dict[str, str]
) -> tuple[Json, dict[str, str]]:
    """The list's answer, and the plans of its count and of its page-of-ids query."""
    seen: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, bound: Any, *_args: Any) -> None:
        seen.append((statement, bound))

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        response = await tracking.get(VERSIONS, params=params, headers=auth)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)
    assert response.status_code == 200, response.text
    counted = [(s, p) for s, p in seen if "count(" in s and "FROM artifact_versions" in s]
    # The page's ids, then its rows by those.
    paged = [(s, p) for s, p in seen if s.split("\n")[0].strip() == "SELECT artifact_versions.id"]
    assert len(counted) == len(paged) == 1, seen
    plans = {}
    async with engine.connect() as conn:
        for name, (statement, bound) in (("count", counted[0]), ("page", paged[0])):
            rows = (await conn.exec_driver_sql("EXPLAIN " + statement, tuple(bound))).all()
            plans[name] = " ".join(str(row[-1]) for row in rows)
    page: Json = response.json()
    return page, plans


@pytest.fixture
async def bulk(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> AsyncEngine:
    """The tracking database, filled by :func:`_fill` (after one version made through the
    API, so the project and tables are in use)."""
    engine: AsyncEngine = tracking_app.state["engine"]
    await create_version(tracking, auth, default_project)
    await _fill(engine, default_project["id"])
    return engine


async def test_three_filter_list_counts_and_pages_in_the_covering_index(
    tracking: httpx.AsyncClient, auth: Headers, bulk: AsyncEngine
) -> None:
    params = {
        "artifact": "bulk-7",
        "type": "ModelArtifact",
        "version_number": "gte:10",
        "sort_by": "desc:created",
        "size": "50",
    }
    page, plans = await _plans(tracking, auth, bulk, params)
    assert page["total"] == 20  # the odd numbers from 11 to 49
    assert [item["body"]["version"] for item in page["items"]] == [
        str(n) for n in range(49, 10, -2)
    ]
    # Without a vacuum, PostgreSQL reads the rows through an index rather than only it.
    for plan in plans.values():
        assert "ix_artifact_versions_artifact_" in plan, plans


async def test_one_artifacts_list_counts_and_pages_in_its_index(
    tracking: httpx.AsyncClient, auth: Headers, bulk: AsyncEngine
) -> None:
    params = {"artifact": "bulk-3", "sort_by": "desc:created", "size": "10"}
    page, plans = await _plans(tracking, auth, bulk, params)
    assert page["total"] == PER_ARTIFACT
    assert [item["body"]["version"] for item in page["items"]] == [
        str(n) for n in range(PER_ARTIFACT, PER_ARTIFACT - 10, -1)
    ]
    # Without a vacuum, PostgreSQL reads the rows through the smallest index, as good.
    for plan in plans.values():
        assert "ix_artifact_versions_artifact_" in plan, plans
