"""A run's status: what only steps may have is refused."""

from __future__ import annotations

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import Json
from tests.tracking.pipeline_run.support import create_run


async def test_a_status_only_steps_have_is_refused_for_a_run_with_403(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    path = f"/api/v1/runs/{run['id']}"
    for status in ("cached", "skipped", "retrying", "retried"):
        refused = await tracking.put(path, json={"status": status}, headers=auth)
        assert refused.status_code == 403, refused.text
        assert refused.json()["detail"] == [
            "IllegalOperationError",
            f"Execution status `{status}` is not valid for pipeline runs.",
        ]
    assert (await tracking.get(path, headers=auth)).json()["body"]["status"] == "running"
