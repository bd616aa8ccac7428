"""Creating and reading secrets, for the secret tests."""

from __future__ import annotations

from typing import Any

import httpx

from tests.tracking.artifact.support import Headers

SECRETS = "/api/v1/secrets"
Json = dict[str, Any]


async def create_secret(
    tracking: httpx.AsyncClient,
    auth: Headers,
    name: str,
    values: dict[str, str] | None = None,
    *,
    private: bool = False,
) -> Json:
    body = {"name": name, "private": private, "values": values or {"key": "value"}}
    response = await tracking.post(SECRETS, json=body, headers=auth)
    assert response.status_code == 200, response.text
    created: Json = response.json()
    return created


async def listed_names(
    tracking: httpx.AsyncClient, auth: Headers, *params: tuple[str, str]
) -> list[str]:
    response = await tracking.get(SECRETS, params=[("size", "100"), *params], headers=auth)
    assert response.status_code == 200, response.text
    return sorted(item["name"] for item in response.json()["items"])
