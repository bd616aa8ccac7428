"""``GET /projects/{id}/statistics``: the counts the dashboard's home page shows, of the
project's own pipelines and runs, exact as runs come and go."""

from __future__ import annotations

import uuid

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.pipeline_run.reference_shapes import check_shape
from tests.tracking.pipeline_run.support import Json, create_pipeline, create_run


async def statistics(tracking: httpx.AsyncClient, auth: Headers, path: str) -> Json:
    response = await tracking.get(path, headers=auth)
    assert response.status_code == 200, response.text
    found: Json = response.json()
    check_shape("ProjectStatistics", found)
    return found


async def test_a_projects_statistics_count_its_pipelines_and_runs(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    path = f"/api/v1/projects/{default_project['id']}/statistics"
    assert await statistics(tracking, auth, path) == {"pipelines": 0, "runs": 0}
    other = await tracking.post("/api/v1/projects", json={"name": "other"}, headers=auth)
    assert other.status_code == 200, other.text
    await create_run(tracking, auth, other.json())
    first = await create_run(tracking, auth, default_project)
    await create_run(tracking, auth, default_project)
    await create_pipeline(tracking, auth, default_project, "never-ran")
    # Each run here has a pipeline of its own.
    assert await statistics(tracking, auth, path) == {"pipelines": 3, "runs": 2}
    by_name = await statistics(tracking, auth, "/api/v1/workspaces/default/statistics")
    assert by_name == {"pipelines": 3, "runs": 2}
    deleted = await tracking.delete(f"/api/v1/runs/{first['id']}", headers=auth)
    assert deleted.status_code == 200
    assert await statistics(tracking, auth, path) == {"pipelines": 3, "runs": 1}
    other_run = await create_run(tracking, auth, default_project)
    assert await statistics(tracking, auth, path) == {"pipelines": 4, "runs": 2}
    gone = await tracking.delete(
        f"/api/v1/pipelines/{other_run['resources']['pipeline']['id']}", headers=auth
    )
    assert gone.status_code == 200
    # The run went with its pipeline.
    assert await statistics(tracking, auth, path) == {"pipelines": 3, "runs": 1}


async def test_the_statistics_of_an_unknown_project_are_404(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.get(f"/api/v1/projects/{uuid.uuid4()}/statistics", headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"][0] == "KeyError"
