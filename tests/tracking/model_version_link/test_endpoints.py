"""``/model_version_artifacts``, ``/model_version_pipeline_runs`` and the link deletions:
made once, listed with the reference's filters, deleted by id or name, or all at once
(optionally with the artifact versions)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import VERSIONS as ARTIFACT_VERSIONS
from tests.tracking.artifact_version.support import create_version
from tests.tracking.model.support import VERSIONS, create_model, create_model_version
from tests.tracking.pipeline_run.support import create_run

Json = dict[str, Any]
ARTIFACT_LINKS = "/api/v1/model_version_artifacts"
RUN_LINKS = "/api/v1/model_version_pipeline_runs"


async def link_artifact(
    tracking: httpx.AsyncClient, auth: Headers, version: Json, artifact_version: Json
) -> Json:
    body = {"model_version": version["id"], "artifact_version": artifact_version["id"]}
    response = await tracking.post(ARTIFACT_LINKS, json=body, headers=auth)
    assert response.status_code == 200, response.text
    link: Json = response.json()
    return link


async def model_version(tracking: httpx.AsyncClient, auth: Headers, project: Json) -> Json:
    model = await create_model(tracking, auth, project, f"m-{uuid.uuid4().hex[:6]}")
    return await create_model_version(tracking, auth, model)


async def linked_names(tracking: httpx.AsyncClient, auth: Headers, **params: str) -> list[str]:
    response = await tracking.get(ARTIFACT_LINKS, params=params, headers=auth)
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    return sorted(i["body"]["artifact_version"]["body"]["artifact"]["name"] for i in items)


async def test_artifact_link_is_made_once_with_the_version_nested(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await model_version(tracking, auth, default_project)
    data = await create_version(tracking, auth, default_project, "data")
    link = await link_artifact(tracking, auth, version, data)
    assert list(link["body"]) == ["created", "updated", "model_version", "artifact_version"]
    assert link["body"]["model_version"] == version["id"]
    nested = link["body"]["artifact_version"]
    assert (nested["id"], nested["metadata"], nested["resources"]) == (data["id"], None, None)
    assert link["metadata"] == {}
    again = await link_artifact(tracking, auth, version, data)
    assert (again["id"], again["metadata"]) == (link["id"], None)


async def test_links_to_missing_ends_are_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await model_version(tracking, auth, default_project)
    missing = str(uuid.uuid4())
    for path, body in (
        (ARTIFACT_LINKS, {"model_version": version["id"], "artifact_version": missing}),
        (RUN_LINKS, {"model_version": version["id"], "pipeline_run": missing}),
        (RUN_LINKS, {"model_version": missing, "pipeline_run": missing}),
    ):
        response = await tracking.post(path, json=body, headers=auth)
        assert response.status_code == 404, response.text


async def test_artifact_links_filter_by_kind_name_and_version(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await model_version(tracking, auth, default_project)
    other = await model_version(tracking, auth, default_project)
    data = await create_version(tracking, auth, default_project, "data")
    weights = await create_version(tracking, auth, default_project, "weights", type="ModelArtifact")
    await link_artifact(tracking, auth, version, data)
    await link_artifact(tracking, auth, version, weights)
    await link_artifact(tracking, auth, other, data)
    mine = {"model_version_id": version["id"]}
    assert await linked_names(tracking, auth, **mine) == ["data", "weights"]
    assert await linked_names(tracking, auth, **mine, only_model_artifacts="true") == ["weights"]
    assert await linked_names(tracking, auth, **mine, only_data_artifacts="true") == ["data"]
    assert await linked_names(tracking, auth, artifact_name="startswith:we") == ["weights"]
    # The artifact versions list answers which versions a model version links.
    listed = await tracking.get(
        ARTIFACT_VERSIONS, params={"model_version_id": other["id"]}, headers=auth
    )
    assert [v["id"] for v in listed.json()["items"]] == [data["id"]]


async def test_delete_artifact_link_by_name_or_id(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await model_version(tracking, auth, default_project)
    data = await create_version(tracking, auth, default_project, "data")
    weights = await create_version(tracking, auth, default_project, "weights")
    await link_artifact(tracking, auth, version, data)
    link = await link_artifact(tracking, auth, version, weights)
    base = f"{VERSIONS}/{version['id']}/artifacts"
    assert (await tracking.delete(f"{base}/data", headers=auth)).status_code == 200
    assert (await tracking.delete(f"{base}/{link['id']}", headers=auth)).status_code == 200
    missing = await tracking.delete(f"{base}/data", headers=auth)
    assert missing.status_code == 404
    assert missing.json()["detail"] == [
        "KeyError",
        "Unable to delete model version link with name or ID `data`: No model version "
        "link with this name found.",
    ]
    assert await linked_names(tracking, auth, model_version_id=version["id"]) == []


async def test_delete_all_artifact_links_keeps_or_deletes_the_versions(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await model_version(tracking, auth, default_project)
    data = await create_version(tracking, auth, default_project, "data")
    await link_artifact(tracking, auth, version, data)
    base = f"{VERSIONS}/{version['id']}/artifacts"
    assert (await tracking.delete(base, headers=auth)).status_code == 200
    kept = await tracking.get(f"{ARTIFACT_VERSIONS}/{data['id']}", headers=auth)
    assert kept.status_code == 200
    await link_artifact(tracking, auth, version, data)
    deleted = await tracking.delete(base, params={"only_links": "false"}, headers=auth)
    assert deleted.status_code == 200
    gone = await tracking.get(f"{ARTIFACT_VERSIONS}/{data['id']}", headers=auth)
    assert gone.status_code == 404


async def test_run_link_is_listed_and_deleted_by_run_name(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await model_version(tracking, auth, default_project)
    run = await create_run(tracking, auth, default_project, name="r-model")
    body = {"model_version": version["id"], "pipeline_run": run["id"]}
    made = await tracking.post(RUN_LINKS, json=body, headers=auth)
    assert made.status_code == 200, made.text
    assert made.json()["body"]["pipeline_run"]["name"] == "r-model"
    named = await tracking.get(RUN_LINKS, params={"pipeline_run_name": "r-model"}, headers=auth)
    assert [i["id"] for i in named.json()["items"]] == [made.json()["id"]]
    path = f"{VERSIONS}/{version['id']}/runs/r-model"
    assert (await tracking.delete(path, headers=auth)).status_code == 200
    assert (await tracking.delete(path, headers=auth)).status_code == 404
    left = await tracking.get(RUN_LINKS, params={"model_version_id": version["id"]}, headers=auth)
    assert left.json()["total"] == 0
