"""``PATCH /flavors/sync``: the built-in registry is always in sync (custom flavors are
in test_custom_flavors.py)."""

from __future__ import annotations

import httpx

from tests.tracking.artifact.support import Headers


async def test_sync_succeeds_with_nothing_to_do(tracking: httpx.AsyncClient, auth: Headers):
    before = await tracking.get("/api/v1/flavors", params={"size": 100}, headers=auth)
    response = await tracking.patch("/api/v1/flavors/sync", headers=auth)
    assert response.status_code == 200
    assert response.json() is None
    after = await tracking.get("/api/v1/flavors", params={"size": 100}, headers=auth)
    assert after.json() == before.json()


async def test_sync_needs_a_login(tracking: httpx.AsyncClient):
    assert (await tracking.patch("/api/v1/flavors/sync")).status_code == 401
