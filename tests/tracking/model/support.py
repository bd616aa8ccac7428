"""What the model and model version tests share: making models and versions."""

from __future__ import annotations

from typing import Any

import httpx

from tests.tracking.artifact.support import Headers

Json = dict[str, Any]
MODELS = "/api/v1/models"
VERSIONS = "/api/v1/model_versions"


async def create_model(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, name: str = "m1", **extra: Any
) -> Json:
    body = {"project": project["id"], "name": name, **extra}
    response = await tracking.post(MODELS, json=body, headers=auth)
    assert response.status_code == 200, response.text
    created: Json = response.json()
    return created


async def create_model_version(
    tracking: httpx.AsyncClient, auth: Headers, model: Json, **extra: Any
) -> Json:
    body = {"project": model["body"]["project_id"], "model": model["id"], **extra}
    response = await tracking.post(VERSIONS, json=body, headers=auth)
    assert response.status_code == 200, response.text
    created: Json = response.json()
    return created
