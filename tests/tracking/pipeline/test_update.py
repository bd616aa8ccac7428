"""``PUT /pipelines/{id}``: the description replaced whole and tags added or taken off, as
ZenML 0.96.3 updates a pipeline."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.pipeline.test_tags import PIPELINES, pipeline_with_tags, tag_names

Json = dict[str, Any]


async def put(tracking: httpx.AsyncClient, auth: Headers, pipeline_id: str, body: Json) -> Any:
    return await tracking.put(f"{PIPELINES}/{pipeline_id}", json=body, headers=auth)


async def test_update_sets_the_description_and_tags(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
):
    pipeline = await pipeline_with_tags(tracking, auth, default_project, ["old", "kept"])
    response = await put(
        tracking, auth, pipeline["id"],
        {"description": "trains", "add_tags": ["new"], "remove_tags": ["old"]},
    )  # fmt: skip
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["metadata"]["description"] == "trains"
    assert sorted(tag_names(body)) == ["kept", "new"]
    assert body["body"]["updated"] > pipeline["body"]["updated"]
    again = await tracking.get(f"{PIPELINES}/{pipeline['id']}", headers=auth)
    assert again.json()["metadata"]["description"] == "trains"


async def test_update_without_a_description_clears_it_as_the_reference(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
):
    pipeline = await pipeline_with_tags(tracking, auth, default_project, [])
    await put(tracking, auth, pipeline["id"], {"description": "trains"})
    response = await put(tracking, auth, pipeline["id"], {"add_tags": ["x"]})
    assert response.status_code == 200
    assert response.json()["metadata"]["description"] is None


async def test_update_of_an_unknown_pipeline_is_404(tracking: httpx.AsyncClient, auth: Headers):
    response = await put(tracking, auth, str(uuid.uuid4()), {"description": "x"})
    assert response.status_code == 404
    assert response.json()["detail"][0] == "KeyError"


async def test_update_with_a_bad_body_is_422(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
):
    pipeline = await pipeline_with_tags(tracking, auth, default_project, [])
    response = await put(tracking, auth, pipeline["id"], {"add_tags": "not-a-list"})
    assert response.status_code == 422
