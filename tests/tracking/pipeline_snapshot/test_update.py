"""``PUT /pipeline_snapshots/{id}``: name (unique in its pipeline, ``replace`` takes it
over), description and tags, as ZenML 0.96.3 updates a snapshot."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import jsonschema_rs
from pydantic import ValidationError

from tests.tracking.artifact.support import Headers
from tests.tracking.pipeline.test_tags import (
    SNAPSHOTS,
    pipeline_with_tags,
    snapshot_with_tags,
    tag_names,
)
from tracking.pipeline_snapshot.schemas import PipelineSnapshotRequest, PipelineSnapshotUpdate

Json = dict[str, Any]


async def put(tracking: httpx.AsyncClient, auth: Headers, snapshot_id: str, body: Json) -> Any:
    return await tracking.put(f"{SNAPSHOTS}/{snapshot_id}", json=body, headers=auth)


async def two_snapshots(
    tracking: httpx.AsyncClient, auth: Headers, project: Json
) -> tuple[Json, Json]:
    pipeline = await pipeline_with_tags(tracking, auth, project, [])
    first = await snapshot_with_tags(tracking, auth, project, pipeline, ["old"])
    second = await snapshot_with_tags(tracking, auth, project, pipeline, [])
    return first, second


async def test_update_names_describes_and_tags_a_snapshot(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
):
    first, _ = await two_snapshots(tracking, auth, default_project)
    response = await put(
        tracking, auth, first["id"],
        {"name": "v1", "description": "first", "add_tags": ["new"], "remove_tags": ["old"]},
    )  # fmt: skip
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["name"] == "v1"
    assert body["metadata"]["description"] == "first"
    assert tag_names(body) == ["new"]


async def test_a_taken_name_is_409_unless_replaced(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
):
    first, second = await two_snapshots(tracking, auth, default_project)
    assert (await put(tracking, auth, first["id"], {"name": "prod"})).status_code == 200
    taken = await put(tracking, auth, second["id"], {"name": "prod"})
    assert taken.status_code == 409
    assert taken.json()["detail"][0] == "EntityExistsError"
    assert "set the `replace` flag to `True`" in taken.json()["detail"][1]
    moved = await put(tracking, auth, second["id"], {"name": "prod", "replace": True})
    assert moved.status_code == 200
    assert moved.json()["name"] == "prod"
    before = await tracking.get(f"{SNAPSHOTS}/{first['id']}", headers=auth)
    assert before.json()["name"] is None


async def test_false_takes_the_name_off_and_an_empty_description_is_kept(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
):
    first, _ = await two_snapshots(tracking, auth, default_project)
    await put(tracking, auth, first["id"], {"name": "v1", "description": "kept"})
    response = await put(tracking, auth, first["id"], {"name": False, "description": ""})
    assert response.status_code == 200
    assert response.json()["name"] is None
    assert response.json()["metadata"]["description"] == "kept"


async def test_bad_names_are_refused(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
):
    first, _ = await two_snapshots(tracking, auth, default_project)
    for name, status in (("", 422), (True, 422), ("x" * 256, 422), ("tab\there", 400)):
        response = await put(tracking, auth, first["id"], {"name": name})
        assert response.status_code == status, (name, response.text)


async def test_update_of_an_unknown_snapshot_is_404(tracking: httpx.AsyncClient, auth: Headers):
    response = await put(tracking, auth, str(uuid.uuid4()), {"description": "x"})
    assert response.status_code == 404


async def test_a_snapshot_created_with_a_false_name_has_none_and_true_is_refused(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
):
    pipeline = await pipeline_with_tags(tracking, auth, default_project, [])
    first = await snapshot_with_tags(tracking, auth, default_project, pipeline, [])
    detail = await tracking.get(f"{SNAPSHOTS}/{first['id']}", headers=auth)
    body = {
        "project": default_project["id"],
        "run_name_template": "run-{date}",
        "stack": detail.json()["resources"]["stack"]["id"],
        "pipeline": pipeline["id"],
    }
    unnamed = await tracking.post(SNAPSHOTS, json={**body, "name": False}, headers=auth)
    assert unnamed.status_code == 200, unnamed.text
    assert unnamed.json()["name"] is None
    refused = await tracking.post(SNAPSHOTS, json={**body, "name": True}, headers=auth)
    assert refused.status_code == 422, refused.text
    assert "Snapshot name cannot be `True`." in refused.text


def test_the_documented_snapshot_name_is_the_one_taken():
    for model in (PipelineSnapshotRequest, PipelineSnapshotUpdate):
        documented = model.model_json_schema()["properties"]["name"]
        validator = jsonschema_rs.validator_for(documented)
        for name in ("v1", False, None, "", True, "x" * 256):
            try:
                model.model_validate({"name": name})
                taken = True
            except ValidationError as exc:
                taken = not any(e["loc"] == ("name",) for e in exc.errors())
            assert validator.is_valid(name) == taken, (model.__name__, name)
