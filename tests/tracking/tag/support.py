"""Making tags and tag links through the API."""

from __future__ import annotations

from typing import Any

import httpx

from tests.tracking.artifact.support import Headers

Json = dict[str, Any]
TAGS = "/api/v1/tags"
LINKS = "/api/v1/tag_resources"


async def create_tag(tracking: httpx.AsyncClient, auth: Headers, name: str, **extra: Any) -> Json:
    response = await tracking.post(TAGS, json={"name": name, **extra}, headers=auth)
    assert response.status_code == 200, response.text
    created: Json = response.json()
    return created


async def link(
    tracking: httpx.AsyncClient, auth: Headers, tag: Json, kind: str, *resources: Json
) -> httpx.Response:
    body = [{"tag_id": tag["id"], "resource_id": r["id"], "resource_type": kind} for r in resources]
    return await tracking.post(f"{LINKS}/batch", json=body, headers=auth)
