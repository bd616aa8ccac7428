"""The pipelines list sorted by ``latest_run``, as the dashboard asks for it: by when each
pipeline last ran (when it was made, if never), found in the runs' index."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import httpx
from sqlalchemy import event, insert, text
from sqlalchemy.ext.asyncio import AsyncEngine

from shared.db import utcnow
from tests.identity.conftest import ADMIN
from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers
from tests.tracking.pipeline_run.support import create_pipeline, create_run
from tracking.models import Pipeline, PipelineRun

Json = dict[str, Any]
PIPELINES = "/api/v1/pipelines"


async def names(tracking: httpx.AsyncClient, auth: Headers, sort_by: str) -> list[str]:
    response = await tracking.get(PIPELINES, params={"sort_by": sort_by}, headers=auth)
    assert response.status_code == 200, response.text
    return [item["name"] for item in response.json()["items"]]


async def test_pipelines_sort_by_their_latest_run_or_else_their_creation(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    first = await create_pipeline(tracking, auth, default_project, "first")
    second = await create_pipeline(tracking, auth, default_project, "second")
    await create_pipeline(tracking, auth, default_project, "never-ran")
    await create_run(tracking, auth, default_project, pipeline=second)
    await create_run(tracking, auth, default_project, pipeline=first)
    assert await names(tracking, auth, "desc:latest_run") == ["first", "second", "never-ran"]
    assert await names(tracking, auth, "asc:latest_run") == ["never-ran", "second", "first"]
    assert await names(tracking, auth, "latest_run") == ["never-ran", "second", "first"]


PIPELINE_COUNT = 200
RUNS_EACH = 100


async def test_the_latest_run_order_reads_the_runs_index_not_every_run(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> None:
    engine: AsyncEngine = tracking_app.state["engine"]
    project_id = uuid.UUID(default_project["id"])
    now = utcnow()
    pipelines = [
        {"id": uuid.uuid4(), "project_id": project_id, "name": f"bulk-{p}", "created": now}
        for p in range(PIPELINE_COUNT)
    ]
    runs = [
        {
            "id": uuid.uuid4(),
            "project_id": project_id,
            "pipeline_id": pipeline["id"],
            "name": f"{pipeline['name']}-{i}",
            "status": "completed",
            "index": i,
            "orchestrator_environment": {},
            # The last pipeline ran last.
            "created": now + dt.timedelta(seconds=p * RUNS_EACH + i),
            "updated": now,
        }
        for p, pipeline in enumerate(pipelines)
        for i in range(RUNS_EACH)
    ]
    async with engine.begin() as conn:
        await conn.execute(
            insert(Pipeline.__table__),  # type: ignore[attr-defined]
            [{**p, "updated": now} for p in pipelines],
        )
        await conn.execute(insert(PipelineRun.__table__), runs)  # type: ignore[attr-defined]
        await conn.execute(text("ANALYZE pipeline_runs"))
        await conn.execute(text("ANALYZE pipelines"))
    seen: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, bound: Any, *_args: Any) -> None:
        seen.append((statement, bound))

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        top = await names(tracking, auth, "desc:latest_run")
        assert top[:2] == [f"bulk-{PIPELINE_COUNT - 1}", f"bulk-{PIPELINE_COUNT - 2}"]
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)
    ordered = [(s, b) for s, b in seen if "max(pipeline_runs.created)" in s and "LIMIT" in s]
    assert ordered, seen
    statement, bound = ordered[0]
    async with engine.connect() as conn:
        plan = " ".join(
            str(row[0])
            for row in (await conn.exec_driver_sql("EXPLAIN " + statement, tuple(bound))).all()
        )
    assert "ix_pipeline_runs_pipeline_created" in plan, plan
    assert "Seq Scan on pipeline_runs" not in plan, plan


async def test_pipelines_filter_by_their_latest_runs_status_and_runner(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    done = await create_pipeline(tracking, auth, default_project, "done")
    busy = await create_pipeline(tracking, auth, default_project, "busy")
    await create_pipeline(tracking, auth, default_project, "never-ran")
    await create_run(tracking, auth, default_project, status="running", pipeline=done)
    await create_run(tracking, auth, default_project, status="completed", pipeline=done)
    await create_run(tracking, auth, default_project, status="running", pipeline=busy)

    async def filtered(**params: str) -> list[str]:
        response = await tracking.get(PIPELINES, params=params, headers=auth)
        assert response.status_code == 200, response.text
        return sorted(item["name"] for item in response.json()["items"])

    assert await filtered(latest_run_status="completed") == ["done"]
    assert await filtered(latest_run_status="running") == ["busy"]
    assert await filtered(latest_run_user=ADMIN) == ["busy", "done"]
    assert await filtered(latest_run_user=str(uuid.uuid4())) == []
