"""``GET /supported-events``: a platform event trigger's events by source type, as ZenML
0.96.3 lists them."""

from __future__ import annotations

import httpx


async def test_supported_events_of_a_pipeline_run_without_login(tracking: httpx.AsyncClient):
    response = await tracking.get(
        "/api/v1/supported-events", params={"source_type": "pipeline_run"}
    )
    assert response.status_code == 200
    assert response.json() == [
        {"value": "completed", "description": "Source pipeline run completed successfully."},
        {"value": "failed", "description": "Source pipeline run failed."},
    ]


async def test_supported_events_of_a_snapshot(tracking: httpx.AsyncClient):
    response = await tracking.get(
        "/api/v1/supported-events", params={"source_type": "pipeline_snapshot"}
    )
    assert [event["value"] for event in response.json()] == ["run_completed", "run_failed"]


async def test_supported_events_need_a_known_source_type(tracking: httpx.AsyncClient):
    for params in ({}, {"source_type": "model"}):
        response = await tracking.get("/api/v1/supported-events", params=params)
        assert response.status_code == 422, params
        assert response.json()["detail"][0]["loc"] == ["query", "source_type"]
