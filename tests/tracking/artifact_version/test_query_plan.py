"""The list with three filters (artifact, type, version number) uses the artifact's index,
not a walk over the project's versions, on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
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
    """``ARTIFACTS`` artifacts with ``PER_ARTIFACT`` versions each, written in bulk."""
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
            "created": now,
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
        if engine.dialect.name == "postgresql":
            await conn.execute(text("ANALYZE artifact_versions"))
            await conn.execute(text("ANALYZE artifacts"))


async def test_three_filter_list_uses_the_artifact_index(
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    tracking_app: LifespanApp,
) -> None:
    engine: AsyncEngine = tracking_app.state["engine"]
    await create_version(tracking, auth, default_project)
    await _fill(engine, default_project["id"])
    seen: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, params: Any, *_args: Any) -> None:
        seen.append((statement, params))

    params = {
        "artifact": "bulk-7",
        "type": "ModelArtifact",
        "version_number": "gte:10",
        "sort_by": "desc:created",
        "size": "50",
    }
    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        response = await tracking.get(VERSIONS, params=params, headers=auth)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)
    assert response.status_code == 200
    assert response.json()["total"] == 20  # the odd numbers from 11 to 49
    listed = [(s, p) for s, p in seen if "FROM artifact_versions" in s and "LIMIT" in s]
    assert listed
    statement, bound = listed[0]
    sqlite = engine.dialect.name == "sqlite"
    prefix = "EXPLAIN QUERY PLAN " if sqlite else "EXPLAIN "
    async with engine.connect() as conn:
        plan = " ".join(
            str(row[-1]) for row in (await conn.exec_driver_sql(prefix + statement, bound)).all()
        )
    assert "ix_artifact_versions_artifact" in plan, plan
    assert "project_created" not in plan, plan
