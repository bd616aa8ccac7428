"""A cached step shows the metadata of the step whose run it reuses, and its outputs take
the pipeline's cascading tags, as the 0.96.3 server does for a reused step."""

from __future__ import annotations

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import VERSIONS, Json, create_version
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


async def test_a_cached_steps_outputs_take_the_pipelines_cascading_tags(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    tags = ["plain", {"name": "lineage", "cascade": True}, {"name": "local", "cascade": False}]
    snapshot = await two_step_snapshot(tracking, auth, default_project, tags=tags)
    first, _ = await post_run(tracking, auth, snapshot)
    version = await create_version(tracking, auth, default_project)
    outputs = {"output": [version["id"]]}
    original = await post_step(
        tracking, auth, first, "make_number", status="completed", outputs=outputs
    )
    tagged = await tracking.get(f"{VERSIONS}/{version['id']}", headers=auth)
    assert tagged.json()["resources"]["tags"] == []  # the client tags what it runs

    second, _ = await post_run(tracking, auth, snapshot)
    await post_step(
        tracking,
        auth,
        second,
        "make_number",
        status="cached",
        original_step_run_id=original["id"],
        outputs=outputs,
    )
    tagged = await tracking.get(f"{VERSIONS}/{version['id']}", headers=auth)
    assert [tag["name"] for tag in tagged.json()["resources"]["tags"]] == ["lineage"]
