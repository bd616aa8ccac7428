"""What the artifact version tests share: a version's request body, creating versions,
the default artifact store and its root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers

Json = dict[str, Any]
VERSIONS = "/api/v1/artifact_versions"
MATERIALIZER = {
    "module": "zenml.materializers.built_in_materializer",
    "attribute": "BuiltInMaterializer",
    "type": "internal",
}
DATA_TYPE = {"module": "builtins", "attribute": "int", "type": "builtin"}


def version_body(project: Json, artifact: str = "model", **extra: Any) -> Json:
    body: Json = {
        "project": project["id"],
        "artifact_name": artifact,
        "type": "DataArtifact",
        "uri": "/nowhere/model",
        "materializer": MATERIALIZER,
        "data_type": DATA_TYPE,
        "save_type": "step_output",
    }
    body.update(extra)
    return body


async def create_version(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, artifact: str = "model", **extra: Any
) -> Json:
    response = await tracking.post(
        VERSIONS, json=version_body(project, artifact, **extra), headers=auth
    )
    assert response.status_code == 200, response.text
    created: Json = response.json()
    return created


async def default_store(tracking: httpx.AsyncClient, auth: Headers) -> tuple[str, Path]:
    """The default artifact store's id and root."""
    response = await tracking.get(
        "/api/v1/components",
        params={"type": "artifact_store", "name": "default", "hydrate": "true"},
        headers=auth,
    )
    assert response.status_code == 200, response.text
    (store,) = response.json()["items"]
    return store["id"], Path(store["metadata"]["configuration"]["path"])


async def list_versions(
    tracking: httpx.AsyncClient, auth: Headers, *params: tuple[str, str]
) -> Json:
    response = await tracking.get(VERSIONS, params=list(params), headers=auth)
    assert response.status_code == 200, response.text
    page: Json = response.json()
    return page


def versions_of(page: Json) -> list[str]:
    return [item["body"]["version"] for item in page["items"]]
