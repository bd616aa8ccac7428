"""Creating service connectors, for the connector tests."""

from __future__ import annotations

from typing import Any

import httpx

from tests.tracking.artifact.support import Headers

CONNECTORS = "/api/v1/service_connectors"
TYPES = "/api/v1/service_connector_types"
Json = dict[str, Any]
DOCKER = {
    "name": "hub",
    "connector_type": "docker",
    "auth_method": "password",
    "resource_types": ["docker-registry"],
    "configuration": {"username": "ann", "password": "s3cret", "registry": "ghcr.io/ann"},
    "labels": {"team": "ml"},
}


async def create(tracking: httpx.AsyncClient, auth: Headers, **changes: Any) -> Json:
    response = await tracking.post(CONNECTORS, json={**DOCKER, **changes}, headers=auth)
    assert response.status_code == 200, response.text
    created: Json = response.json()
    return created
