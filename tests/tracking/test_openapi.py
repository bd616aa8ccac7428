"""Tracking's OpenAPI document lists every route of this issue, from the declarations."""

from __future__ import annotations

import httpx

EXPECTED = {
    "/api/v1/artifact_versions": {"get", "post", "delete"},
    "/api/v1/artifact_versions/batch": {"post"},
    "/api/v1/artifact_versions/{artifact_version_id}": {"get", "put", "delete"},
    "/api/v1/artifact_versions/{artifact_version_id}/visualize": {"get"},
    "/api/v1/artifact_versions/{artifact_version_id}/download-token": {"get"},
    "/api/v1/artifact_versions/{artifact_version_id}/data": {"get"},
    "/api/v1/deployments": {"get", "post"},
    "/api/v1/deployments/{deployment_id}": {"get", "delete"},
    "/api/v1/runs": {"get", "post"},
    "/api/v1/runs/{run_id}": {"get", "put", "delete"},
    "/api/v1/steps": {"post"},
    "/api/v1/steps/{step_id}": {"get"},
    "/api/v1/schedules": {"get", "post"},
    "/api/v1/schedules/{schedule_id}": {"get", "put", "delete"},
    "/api/v1/pipelines": {"get", "post"},
    "/api/v1/pipeline_snapshots": {"post"},
    "/api/v1/pipeline_snapshots/{snapshot_id}/runs": {"post"},
}


async def test_openapi_lists_the_new_routes(tracking: httpx.AsyncClient) -> None:
    response = await tracking.get("/openapi.json")
    assert response.status_code == 200
    document = response.json()
    paths = document["paths"]
    for path, methods in EXPECTED.items():
        assert set(paths.get(path, {})) >= methods, path
    data = paths["/api/v1/artifact_versions/{artifact_version_id}/data"]["get"]
    assert "security" not in data  # the download token is the only credential
    token = paths["/api/v1/artifact_versions/{artifact_version_id}/download-token"]["get"]
    assert token["security"] == [{"CookieOAuth2TokenBearer": []}]
    run = paths["/api/v1/pipeline_snapshots/{snapshot_id}/runs"]["post"]
    assert run["security"] == [{"CookieOAuth2TokenBearer": []}]
    body = run["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body.endswith("/PipelineSnapshotRunRequest")
    listed = paths["/api/v1/artifact_versions"]["get"]
    names = {p["name"] for p in listed["parameters"]}
    assert {"artifact", "version_number", "only_unused", "run_metadata", "pipeline_run"} <= names
