"""``/services``: the reference's envelope, one service per configuration, the run it
came from, status setting the state, updates, filters and the deprecated create path."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers, names
from tests.tracking.pipeline_run.support import create_run

SERVICES = "/api/v1/services"
CONFIG = {"pipeline_name": "training", "pipeline_step_name": "deploy", "n": 1}
SERVICE_TYPE = {"type": "model-serving", "flavor": "mlflow", "name": "mlflow-deployment"}
Json = dict[str, Any]


async def post_service(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, **extra: Any
) -> httpx.Response:
    body = {
        "project": project["id"],
        "name": "predictor",
        "service_type": SERVICE_TYPE,
        "config": CONFIG,
        **extra,
    }
    return await tracking.post(SERVICES, json=body, headers=auth)


async def test_create_renders_the_reference_envelope(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    response = await post_service(
        tracking,
        auth,
        default_project,
        labels={"team": "ml"},
        status={"state": "active", "last_error": ""},
        admin_state="active",
        endpoint={"url": "http://predictor"},
        prediction_url="http://predictor/predict",
        pipeline_run_id=run["id"],
    )
    assert response.status_code == 200, response.text
    service = response.json()
    assert list(service) == ["body", "metadata", "resources", "id", "permission_denied", "name"]
    body = service["body"]
    assert body["service_type"] == {**SERVICE_TYPE, "description": "", "logo_url": ""}
    assert (body["labels"], body["state"]) == ({"team": "ml"}, "active")
    metadata = service["metadata"]
    assert metadata["config"] == {
        "pipeline_name": "training",
        "pipeline_step_name": "deploy",
        "n": 1,
    }
    assert (metadata["admin_state"], metadata["status"]["state"]) == ("active", "active")
    assert metadata["prediction_url"] == "http://predictor/predict"
    assert metadata["health_check_url"] is None
    assert service["resources"]["pipeline_run"]["id"] == run["id"]
    assert service["resources"]["model_version"] is None
    got = await tracking.get(f"{SERVICES}/{service['id']}", headers=auth)
    assert got.json() == service
    bare = await tracking.get(f"{SERVICES}/{service['id']}?hydrate=false", headers=auth)
    assert bare.json()["metadata"] is None


async def test_a_configuration_serves_one_service(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    assert (await post_service(tracking, auth, default_project)).status_code == 200
    again = await post_service(tracking, auth, default_project, name="other")
    assert again.status_code == 409
    assert again.json()["detail"] == [
        "EntityExistsError",
        "Unable to create service 'other' with the given configuration: A service with the "
        "same configuration already exists.",
    ]
    # The same keys in another order are another configuration text, as the reference's.
    reordered = {"n": 1, "pipeline_step_name": "deploy", "pipeline_name": "training"}
    other = await post_service(tracking, auth, default_project, config=reordered)
    assert other.status_code == 200, other.text


async def test_unknown_references_are_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    missing = str(uuid.uuid4())
    response = await post_service(tracking, auth, default_project, pipeline_run_id=missing)
    assert response.status_code == 404
    assert response.json()["detail"][1] == (
        f"The pipeline run with ID {missing} referenced by the service being created was not found"
    )
    response = await post_service(tracking, auth, default_project, model_version_id=missing)
    assert response.status_code == 404
    unknown = await tracking.get(f"{SERVICES}/{missing}", headers=auth)
    assert unknown.json()["detail"][1].startswith("Unable to get service with ID")


async def test_update_sets_given_fields_and_the_state_from_the_status(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    created = (await post_service(tracking, auth, default_project)).json()
    response = await tracking.put(
        f"{SERVICES}/{created['id']}",
        json={"name": "renamed", "status": {"state": "error"}, "health_check_url": "http://h"},
        headers=auth,
    )
    assert response.status_code == 200, response.text
    updated = response.json()
    assert (updated["name"], updated["body"]["state"]) == ("renamed", "error")
    assert updated["metadata"]["health_check_url"] == "http://h"
    assert updated["metadata"]["config"] == created["metadata"]["config"]
    deleted = await tracking.delete(f"{SERVICES}/{created['id']}", headers=auth)
    assert deleted.status_code == 200
    assert (await tracking.get(f"{SERVICES}/{created['id']}", headers=auth)).status_code == 404


async def test_list_filters_and_the_workspace_create(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    workspace = f"/api/v1/workspaces/{default_project['name']}/services"
    body = {
        "project": str(uuid.uuid4()),
        "name": "b-zoo",
        "service_type": {"type": "model-serving", "flavor": "bentoml"},
        "config": {"pipeline_name": "other"},
    }
    created = await tracking.post(workspace, json=body, headers=auth)
    assert created.status_code == 200, created.text
    await post_service(tracking, auth, default_project, name="a-ml")
    listed = await tracking.get(SERVICES, params={"sort_by": "asc:name"}, headers=auth)
    assert names(listed) == ["a-ml", "b-zoo"]
    assert names(await tracking.get(SERVICES, params={"flavor": "bentoml"}, headers=auth)) == [
        "b-zoo"
    ]
    by_pipeline = await tracking.get(SERVICES, params={"pipeline_name": "training"}, headers=auth)
    assert names(by_pipeline) == ["a-ml"]
    ignored = await tracking.get(SERVICES, params={"running": "true", "config": "x"}, headers=auth)
    assert len(names(ignored)) == 2
