"""Deployments: created against a snapshot of the project and a real deployer, listed with
every filter the reference has, read."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.tracking.artifact.support import Headers, new_project
from tests.tracking.artifact_version.support import Json
from tests.tracking.pipeline_run.support import create_pipeline, create_snapshot

DEPLOYMENTS = "/api/v1/deployments"


async def create_deployer(tracking: httpx.AsyncClient, auth: Headers, name: str = "dep") -> Json:
    response = await tracking.post(
        "/api/v1/components",
        json={"name": name, "type": "deployer", "flavor": "local", "configuration": {}},
        headers=auth,
    )
    assert response.status_code == 200, response.text
    deployer: Json = response.json()
    return deployer


def deployment_body(
    project: Json, name: str, snapshot: Json, deployer: Json, **extra: object
) -> Json:
    return {
        "project": project["id"],
        "name": name,
        "snapshot_id": snapshot["id"],
        "deployer_id": deployer["id"],
        **extra,
    }


async def create_deployment(
    tracking: httpx.AsyncClient,
    auth: Headers,
    project: Json,
    name: str,
    snapshot: Json,
    deployer: Json,
    **extra: object,
) -> Json:
    body = deployment_body(project, name, snapshot, deployer, **extra)
    response = await tracking.post(DEPLOYMENTS, json=body, headers=auth)
    assert response.status_code == 200, response.text
    created: Json = response.json()
    return created


async def test_create_returns_the_reference_shape(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    pipeline = await create_pipeline(tracking, auth, default_project, "serve")
    snapshot = await create_snapshot(tracking, auth, default_project, pipeline)
    deployer = await create_deployer(tracking, auth)
    made = await create_deployment(
        tracking,
        auth,
        default_project,
        "api",
        snapshot,
        deployer,
        auth_key="k",
        tags=["b", {"name": "a", "color": "red"}],
    )
    assert list(made) == ["body", "metadata", "resources", "id", "permission_denied", "name"]
    assert (made["body"]["status"], made["body"]["url"]) == ("unknown", None)
    assert made["metadata"] == {"deployment_metadata": {}, "auth_key": "k"}
    resources = made["resources"]
    assert list(resources) == [
        "user",
        "snapshot",
        "deployer",
        "pipeline",
        "tags",
        "visualizations",
        "stack",
    ]
    assert resources["snapshot"]["id"] == snapshot["id"]
    assert resources["snapshot"]["metadata"] is None
    assert resources["deployer"]["id"] == deployer["id"]
    assert resources["deployer"]["body"]["type"] == "deployer"
    assert resources["pipeline"]["name"] == "serve"
    assert resources["stack"]["name"] == "default"
    assert [t["name"] for t in resources["tags"]] == ["a", "b"]
    got = await tracking.get(f"{DEPLOYMENTS}/{made['id']}", headers=auth)
    assert got.json() == made


async def test_duplicate_name_is_409(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await create_snapshot(tracking, auth, default_project)
    deployer = await create_deployer(tracking, auth)
    await create_deployment(tracking, auth, default_project, "api", snapshot, deployer)
    body = deployment_body(default_project, "api", snapshot, deployer)
    response = await tracking.post(DEPLOYMENTS, json=body, headers=auth)
    assert response.status_code == 409
    assert response.json()["detail"][1] == (
        "Unable to create the requested deployment with name 'api': Found another existing "
        "deployment with the same name in the 'default' project."
    )


async def test_an_empty_name_is_taken_as_the_reference_takes_it(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await create_snapshot(tracking, auth, default_project)
    deployer = await create_deployer(tracking, auth)
    created = await create_deployment(tracking, auth, default_project, "", snapshot, deployer)
    assert created["name"] == ""


async def test_a_component_that_is_not_a_deployer_is_400(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await create_snapshot(tracking, auth, default_project)
    stores = await tracking.get("/api/v1/components?type=artifact_store", headers=auth)
    store = stores.json()["items"][0]
    response = await tracking.post(
        DEPLOYMENTS, json=deployment_body(default_project, "x", snapshot, store), headers=auth
    )
    assert response.status_code == 400
    assert "not a deployer" in response.json()["detail"][1]


async def test_unknown_deployer_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await create_snapshot(tracking, auth, default_project)
    body = deployment_body(default_project, "x", snapshot, {"id": str(uuid.uuid4())})
    assert (await tracking.post(DEPLOYMENTS, json=body, headers=auth)).status_code == 404


async def test_snapshot_of_another_project_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    other = await new_project(tracking, auth, "other")
    snapshot = await create_snapshot(tracking, auth, other)
    deployer = await create_deployer(tracking, auth)
    response = await tracking.post(
        DEPLOYMENTS, json=deployment_body(default_project, "x", snapshot, deployer), headers=auth
    )
    assert response.status_code == 404
    assert response.json()["detail"][1] == (
        f"The pipeline snapshot with ID {snapshot['id']} referenced by the deployment being "
        f"created was not found in the '{default_project['id']}' project"
    )


async def test_unknown_deployment_is_404(tracking: httpx.AsyncClient, auth: Headers) -> None:
    assert (await tracking.get(f"{DEPLOYMENTS}/{uuid.uuid4()}", headers=auth)).status_code == 404


@pytest.fixture
async def fleet(tracking: httpx.AsyncClient, auth: Headers, default_project: Json) -> list[Json]:
    first = await create_pipeline(tracking, auth, default_project, "alpha")
    second = await create_pipeline(tracking, auth, default_project, "beta")
    snapshot_a = await create_snapshot(tracking, auth, default_project, first)
    snapshot_b = await create_snapshot(tracking, auth, default_project, second)
    one = await create_deployer(tracking, auth, "one")
    two = await create_deployer(tracking, auth, "two")
    return [
        await create_deployment(
            tracking, auth, default_project, "a1", snapshot_a, one, tags=["prod"]
        ),
        await create_deployment(tracking, auth, default_project, "b1", snapshot_b, one),
        await create_deployment(tracking, auth, default_project, "b2", snapshot_b, two),
    ]


async def names(tracking: httpx.AsyncClient, auth: Headers, *params: tuple[str, str]) -> list[str]:
    response = await tracking.get(DEPLOYMENTS, params=list(params), headers=auth)
    assert response.status_code == 200, response.text
    return [d["name"] for d in response.json()["items"]]


async def test_filters(tracking: httpx.AsyncClient, auth: Headers, fleet: list[Json]) -> None:
    a1, b1, b2 = fleet
    assert await names(tracking, auth, ("name", "startswith:b")) == ["b1", "b2"]
    assert await names(tracking, auth, ("status", "unknown")) == ["a1", "b1", "b2"]
    assert await names(tracking, auth, ("url", "isnull:")) == ["a1", "b1", "b2"]
    assert await names(tracking, auth, ("pipeline", "beta")) == ["b1", "b2"]
    pipeline_id = a1["resources"]["pipeline"]["id"]
    assert await names(tracking, auth, ("pipeline", pipeline_id)) == ["a1"]
    snapshot_id = b1["resources"]["snapshot"]["id"]
    assert await names(tracking, auth, ("snapshot_id", snapshot_id)) == ["b1", "b2"]
    deployer_id = b2["resources"]["deployer"]["id"]
    assert await names(tracking, auth, ("deployer_id", deployer_id)) == ["b2"]
    assert await names(tracking, auth, ("tags", "prod")) == ["a1"]
    assert await names(tracking, auth, ("user", "default")) == ["a1", "b1", "b2"]
    assert await names(tracking, auth, ("project", "default"), ("id", a1["id"])) == ["a1"]


async def test_sort_by_pipeline_and_snapshot(
    tracking: httpx.AsyncClient, auth: Headers, fleet: list[Json]
) -> None:
    by_pipeline = await names(tracking, auth, ("sort_by", "desc:pipeline"))
    assert (sorted(by_pipeline[:2]), by_pipeline[2]) == (["b1", "b2"], "a1")
    assert len(await names(tracking, auth, ("sort_by", "snapshot"))) == 3
    assert (await names(tracking, auth, ("sort_by", "desc:tags")))[0] == "a1"


async def test_status_values_are_the_reference_enum() -> None:
    from tracking.deployment.schemas import DeploymentStatus

    assert [s.value for s in DeploymentStatus] == [
        "unknown",
        "pending",
        "running",
        "absent",
        "error",
    ]
