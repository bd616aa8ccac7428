"""Creating components, for the component and stack tests."""

from __future__ import annotations

from typing import Any

import httpx

from tests.tracking.artifact.support import Headers

COMPONENTS = "/api/v1/components"


async def create_component(
    tracking: httpx.AsyncClient,
    auth: Headers,
    name: str,
    component_type: str = "artifact_store",
    configuration: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A local artifact store (under ``/tmp``) or a local orchestrator."""
    if configuration is None:
        configuration = (
            {"path": f"/tmp/stores/{name}"} if component_type == "artifact_store" else {}
        )
    response = await tracking.post(
        COMPONENTS,
        json={
            "name": name,
            "type": component_type,
            "flavor": "local",
            "configuration": configuration,
        },
        headers=auth,
    )
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created
