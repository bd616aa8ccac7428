"""A cached step shows the metadata of the step whose run it reuses, as the 0.96.3 server
links it."""

from __future__ import annotations

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import Json
from tests.tracking.run_metadata.test_endpoints import METADATA, request
from tests.tracking.step_run.support import post_run, post_step, two_step_snapshot


async def test_a_cached_step_shows_its_originals_metadata(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await two_step_snapshot(tracking, auth, default_project)
    first, _ = await post_run(tracking, auth, snapshot)
    original = await post_step(tracking, auth, first, "make_number", status="completed")
    body = request(default_project, "step_run", original["id"], rows=3, note="made")
    assert (await tracking.post(METADATA, json=body, headers=auth)).status_code == 200

    second, _ = await post_run(tracking, auth, snapshot)
    cached = await post_step(
        tracking, auth, second, "make_number", status="cached", original_step_run_id=original["id"]
    )
    assert cached["metadata"]["run_metadata"] == {"note": "made", "rows": 3}
    fresh = await post_step(tracking, auth, second, "double", status="completed")
    assert fresh["metadata"]["run_metadata"] == {}
