"""Listing runs: each run with its snapshot, pipeline, tags and metadata, read once per
page."""

from __future__ import annotations

import httpx

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers, statements
from tests.tracking.artifact_version.support import Json
from tests.tracking.pipeline_run.support import create_run
from tests.tracking.run_metadata.test_endpoints import METADATA
from tests.tracking.run_metadata.test_endpoints import request as metadata_request


async def test_listing_runs_reads_their_snapshots_once_per_page(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> None:
    # Each run of its own snapshot and pipeline, with a tag and metadata of its own.
    runs = {}
    for i in range(6):
        run = await create_run(tracking, auth, default_project, f"run-{i}", tags=[f"tag-{i}"])
        runs[run["id"]] = run
        body = metadata_request(default_project, "pipeline_run", run["id"], index=i)
        assert (await tracking.post(METADATA, json=body, headers=auth)).status_code == 200
    counted = []
    for size in (2, 6):
        with statements(tracking_app.state["engine"]) as seen:
            response = await tracking.get(
                "/api/v1/runs", params={"size": size, "hydrate": "true"}, headers=auth
            )
        assert response.status_code == 200, response.text
        items = response.json()["items"]
        assert len(items) == size
        for item in items:
            created = runs[item["id"]]["resources"]
            assert item["resources"]["snapshot"]["id"] == created["snapshot"]["id"]
            assert item["resources"]["pipeline"]["id"] == created["pipeline"]["id"]
            config = item["metadata"]["config"]
            assert config["name"] == created["pipeline"]["name"]
            assert set(config["substitutions"]) == {"date", "time"}
            index = item["name"].removeprefix("run-")
            assert [tag["name"] for tag in item["resources"]["tags"]] == [f"tag-{index}"]
            assert item["metadata"]["run_metadata"] == {"index": int(index)}
        counted.append(len([s for s in seen if s.lstrip().upper().startswith("SELECT")]))
    # The project, the count, the page, the page's snapshots, their pipelines and stacks,
    # and the page's logs, tags, metadata and pending wait conditions.
    assert counted == [10, 10]


async def test_a_run_whose_snapshot_is_gone_lists_without_one(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project, "orphan")
    snapshot_id = run["resources"]["snapshot"]["id"]
    deleted = await tracking.delete(f"/api/v1/pipeline_snapshots/{snapshot_id}", headers=auth)
    assert deleted.status_code == 200, deleted.text
    listed = await tracking.get("/api/v1/runs", params={"name": "orphan"}, headers=auth)
    assert listed.status_code == 200, listed.text
    (item,) = listed.json()["items"]
    assert (item["resources"]["snapshot"], item["resources"]["pipeline"]) == (None, None)
    got = await tracking.get(f"/api/v1/runs/{run['id']}", headers=auth)
    assert got.status_code == 200, got.text
    assert got.json()["resources"]["snapshot"] is None
