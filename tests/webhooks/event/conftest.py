"""The consumer's tests against the real tracking app: a snapshot in it, and a trigger
running that snapshot."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.tracking.pipeline_run.support import create_snapshot
from tests.webhooks.event.support import TRIGGERS


@pytest.fixture
async def tracking(tracking_app) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=tracking_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://tracking") as client:
        yield client


@pytest.fixture
async def snapshot(tracking, auth, project) -> dict[str, Any]:
    """A real snapshot in the tracking app the worker asks (each run named apart)."""
    return await create_snapshot(tracking, auth, project, run_name_template="run-{date}-{time}")


@pytest.fixture
async def wired_to_tracking(client, auth, create_webhook, project, snapshot):
    """A codehost webhook with a trigger on pushes to main running a real snapshot."""
    hook = await create_webhook("codehost")
    body = {
        "project": project["id"],
        "name": "main-pushes",
        "webhook_id": hook["id"],
        "snapshot_id": snapshot["id"],
        "configuration": {"target_events": [{"type": "push", "branch": "main"}]},
    }
    response = await client.post(TRIGGERS, json=body, headers=auth)
    assert response.status_code == 200, response.text
    return hook, response.json()
