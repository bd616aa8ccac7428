"""``POST /run-metadata`` as ``zenml.log_metadata`` sends it: values on artifact versions
(shown in their ``run_metadata`` and matched by its filter), runs, steps and schedules,
and the request's rules."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import VERSIONS, create_version
from tests.tracking.pipeline_run.support import create_run, create_step
from tracking.run_metadata.repository import RunMetadataRepository
from tracking.run_metadata.schemas import MetadataResourceTypes

Json = dict[str, Any]
METADATA = "/api/v1/run-metadata"


def request(project: Json, kind: str, *ids: str, **values: Any) -> Json:
    return {
        "project": project["id"],
        "resources": [{"id": i, "type": kind} for i in ids],
        "values": values,
        "types": {key: type(value).__name__ for key, value in values.items()},
    }


async def hydrated(tracking: httpx.AsyncClient, auth: Headers, version: Json) -> Json:
    response = await tracking.get(f"{VERSIONS}/{version['id']}", headers=auth)
    assert response.status_code == 200, response.text
    metadata: Json = response.json()["metadata"]["run_metadata"]
    return metadata


async def test_values_show_on_the_version_and_a_key_set_again_takes_its_new_value(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project)
    body = request(default_project, "artifact_version", version["id"], accuracy=0.5, rows=10)
    body["values"]["params"] = {"lr": 0.1, "layers": [1, 2]}
    body["types"]["params"] = "dict"
    response = await tracking.post(METADATA, json=body, headers=auth)
    assert (response.status_code, response.json()) == (200, None)
    again = request(default_project, "artifact_version", version["id"], accuracy=0.9)
    assert (await tracking.post(METADATA, json=again, headers=auth)).status_code == 200
    assert await hydrated(tracking, auth, version) == {
        "accuracy": 0.9,
        "params": {"layers": [1, 2], "lr": 0.1},
        "rows": 10,
    }
    page = await tracking.get(VERSIONS, params={"run_metadata": "accuracy:0.9"}, headers=auth)
    assert [item["id"] for item in page.json()["items"]] == [version["id"]]


async def test_one_request_sets_several_resources(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    first = await create_version(tracking, auth, default_project, "a")
    second = await create_version(tracking, auth, default_project, "b")
    body = request(default_project, "artifact_version", first["id"], second["id"], stage="dev")
    assert (await tracking.post(METADATA, json=body, headers=auth)).status_code == 200
    assert await hydrated(tracking, auth, first) == {"stage": "dev"}
    assert await hydrated(tracking, auth, second) == {"stage": "dev"}


async def test_runs_and_steps_take_metadata(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: Any
) -> None:
    """What their ``run_metadata`` shows (:meth:`RunMetadataRepository.values`)."""
    run = await create_run(tracking, auth, default_project)
    step = await create_step(tracking, auth, default_project, run)
    body = request(default_project, "pipeline_run", run["id"], note="ok")
    body["resources"].append({"id": step["id"], "type": "step_run"})
    assert (await tracking.post(METADATA, json=body, headers=auth)).status_code == 200
    async with tracking_app.state["sessionmaker"]() as session:
        metadata = RunMetadataRepository(session)
        runs = await metadata.values(MetadataResourceTypes.PIPELINE_RUN, [uuid.UUID(run["id"])])
        steps = await metadata.values(MetadataResourceTypes.STEP_RUN, [uuid.UUID(step["id"])])
    assert (runs, steps) == (
        {uuid.UUID(run["id"]): {"note": "ok"}},
        {uuid.UUID(step["id"]): {"note": "ok"}},
    )


async def test_missing_resources_are_404_and_nothing_is_written(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project)
    body = request(
        default_project, "artifact_version", version["id"], str(uuid.uuid4()), stage="dev"
    )
    response = await tracking.post(METADATA, json=body, headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"][0] == "KeyError"
    assert await hydrated(tracking, auth, version) == {}
    for kind in ("pipeline_run", "step_run", "schedule", "model_version", "wait_condition"):
        missing = request(default_project, kind, str(uuid.uuid4()), stage="dev")
        assert (await tracking.post(METADATA, json=missing, headers=auth)).status_code == 404


async def test_bad_requests_are_422(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project)
    good = request(default_project, "artifact_version", version["id"], stage="dev")
    bad_bodies = [
        {**good, "values": {"a:b": 1}, "types": {"a:b": "int"}},
        {**good, "types": {}},
        {**good, "types": {"stage": "complex"}},
        {**good, "resources": [{"id": version["id"], "type": "spaceship"}]},
        {**good, "values": {"k" * 256: 1}, "types": {"k" * 256: "int"}},
        {key: value for key, value in good.items() if key != "project"},
    ]
    for body in bad_bodies:
        response = await tracking.post(METADATA, json=body, headers=auth)
        assert response.status_code == 422, body
    unknown_project = {**good, "project": str(uuid.uuid4())}
    assert (await tracking.post(METADATA, json=unknown_project, headers=auth)).status_code == 404


async def test_no_resources_sets_nothing(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project)
    body = request(default_project, "artifact_version", version["id"], stage="dev")
    response = await tracking.post(METADATA, json={**body, "resources": []}, headers=auth)
    assert response.status_code == 200, response.text
    assert await hydrated(tracking, auth, version) == {}


async def test_the_deprecated_workspace_route_names_the_project(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project)
    body = request(default_project, "artifact_version", version["id"], stage="prod")
    response = await tracking.post(
        "/api/v1/workspaces/default/run-metadata", json=body, headers=auth
    )
    assert response.status_code == 200, response.text
    assert await hydrated(tracking, auth, version) == {"stage": "prod"}
    nowhere = await tracking.post(
        "/api/v1/workspaces/nowhere/run-metadata", json=body, headers=auth
    )
    assert nowhere.status_code == 404
