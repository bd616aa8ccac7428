"""``/statistics`` and ``/component-types`` as ZenML 0.96.3's open-source server answers."""

from __future__ import annotations

import httpx

from tests.tracking.artifact.support import Headers


async def statistics(tracking: httpx.AsyncClient, auth: Headers) -> dict[str, int]:
    response = await tracking.get("/api/v1/statistics", headers=auth)
    assert response.status_code == 200, response.text
    body: dict[str, int] = response.json()
    return body


async def test_statistics_count_stacks_components_and_projects(
    tracking: httpx.AsyncClient, auth: Headers
):
    before = await statistics(tracking, auth)
    # The defaults: one stack of two components, one project.
    assert before == {"stacks": 1, "components": 2, "projects": 1}
    created = await tracking.post("/api/v1/projects", json={"name": "second"}, headers=auth)
    assert created.status_code == 200, created.text
    component = {"name": "store", "type": "artifact_store", "flavor": "local",
                 "configuration": {"path": "/tmp/store"}}  # fmt: skip
    created = await tracking.post("/api/v1/components", json=component, headers=auth)
    assert created.status_code == 200, created.text
    assert await statistics(tracking, auth) == {"stacks": 1, "components": 3, "projects": 2}


async def test_statistics_need_a_login(tracking: httpx.AsyncClient):
    assert (await tracking.get("/api/v1/statistics")).status_code == 401


async def test_component_types_are_the_reference_types_in_its_order(
    tracking: httpx.AsyncClient, auth: Headers
):
    response = await tracking.get("/api/v1/component-types", headers=auth)
    assert response.status_code == 200
    assert response.json() == [
        "alerter", "annotator", "artifact_store", "container_registry", "data_validator",
        "experiment_tracker", "feature_store", "image_builder", "log_store", "model_deployer",
        "orchestrator", "step_operator", "model_registry", "deployer", "sandbox",
    ]  # fmt: skip


async def test_component_types_need_a_login(tracking: httpx.AsyncClient):
    assert (await tracking.get("/api/v1/component-types")).status_code == 401
