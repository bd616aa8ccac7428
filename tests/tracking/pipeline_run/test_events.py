"""A run's live events: this server has no stream broker, so it answers as ZenML 0.96.3's
server without one."""

from __future__ import annotations

import uuid

import httpx

from tests.tracking.artifact.support import Headers


async def test_run_events_answer_501_streaming_not_enabled(
    tracking: httpx.AsyncClient, auth: Headers
):
    events = f"/api/v1/runs/{uuid.uuid4()}/events"
    published = await tracking.post(events, json={"events": []}, headers=auth)
    streamed = await tracking.get(events + "/stream", headers=auth)
    for response in (published, streamed):
        assert response.status_code == 501
        assert response.json() == {"detail": "Live event streaming is not enabled on this server."}


async def test_run_events_need_a_login(tracking: httpx.AsyncClient):
    response = await tracking.get(f"/api/v1/runs/{uuid.uuid4()}/events/stream")
    assert response.status_code == 401
