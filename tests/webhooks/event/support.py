"""What the consumer's tests share: deliveries to a webhook and its trigger's
executions, a clock the test moves, and tracking served over real HTTP on a port it can
be taken off and put back on."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from shared.db import utcnow
from tests.support.asgi import LifespanApp, served
from tests.webhooks.support import codehost_headers

TRIGGERS = "/api/v1/webhook_triggers"


async def deliver(
    client: httpx.AsyncClient, hook: dict[str, Any], body: bytes, delivery: str
) -> None:
    response = await client.post(
        f"/api/v1/webhooks/codehost/{hook['id']}/events",
        content=body,
        headers=codehost_headers(hook["secret"], body, delivery=delivery),
    )
    assert response.status_code == 202, response.text


async def executions(client, auth, trigger) -> list[dict[str, Any]]:
    response = await client.get(f"{TRIGGERS}/{trigger['id']}/executions", headers=auth)
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


async def runs_of(tracking, auth, snapshot) -> list[dict[str, Any]]:
    response = await tracking.get(
        "/api/v1/runs",
        params={"snapshot_id": snapshot["id"], "hydrate": "true", "size": 1000},
        headers=auth,
    )
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


class MovableClock:
    """The time, moved forward by :attr:`offset` (what the worker judges its retry
    horizon by, while arq's schedule keeps real time)."""

    def __init__(self, offset: dt.timedelta = dt.timedelta(0)) -> None:
        self.offset = offset

    def __call__(self) -> dt.datetime:
        return utcnow() + self.offset


@asynccontextmanager
async def tracking_on(app: LifespanApp, port: int) -> AsyncIterator[str]:
    """The running tracking ``app`` served by uvicorn on ``port`` until the block ends
    (then connections to it are refused); its URL."""
    async with served(app, port=port, lifespan="off") as url:
        yield url
