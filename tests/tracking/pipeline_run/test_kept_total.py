"""The unfiltered runs list's total is the project's run count that triggers keep, not a
count of its runs; a filtered list still counts its matches."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers
from tests.tracking.pipeline_run.support import Json, create_run

RUNS = "/api/v1/runs"


async def test_the_unfiltered_runs_total_is_kept_and_a_filtered_one_counted(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> None:
    first = await create_run(tracking, auth, default_project)
    await create_run(tracking, auth, default_project, status="completed")
    await create_run(tracking, auth, default_project)
    assert (await tracking.delete(f"{RUNS}/{first['id']}", headers=auth)).status_code == 200
    engine: AsyncEngine = tracking_app.state["engine"]
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        unfiltered = await tracking.get(RUNS, params={"size": "1"}, headers=auth)
        counted = [s for s in seen if "count(" in s and "FROM pipeline_runs" in s]
        filtered = await tracking.get(RUNS, params={"status": "completed"}, headers=auth)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)
    assert unfiltered.json()["total"] == 2
    assert len(unfiltered.json()["items"]) == 1
    assert counted == []
    assert filtered.json()["total"] == 1
    assert [s for s in seen if "count(" in s and "FROM pipeline_runs" in s]
