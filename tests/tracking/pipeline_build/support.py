"""Making pipeline builds through the API."""

from __future__ import annotations

from typing import Any

import httpx

from tests.tracking.artifact.support import Headers

Json = dict[str, Any]
BUILDS = "/api/v1/pipeline_builds"
IMAGE = {
    "image": "registry.local/zenml:training-orchestrator",
    "dockerfile": "FROM python:3.11",
    "requirements": "numpy==2.0",
    "settings_checksum": "abc",
    "contains_code": True,
}


async def create_build(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, **extra: Any
) -> Json:
    body = {
        "project": project["id"],
        "images": {"orchestrator": IMAGE},
        "is_local": False,
        "contains_code": True,
        "zenml_version": "0.96.3",
        "python_version": "3.11",
        "checksum": "c1",
        "stack_checksum": "s1",
        "duration": 42,
        **extra,
    }
    response = await tracking.post(BUILDS, json=body, headers=auth)
    assert response.status_code == 200, response.text
    created: Json = response.json()
    return created
