"""``/pipeline_builds``: stored as sent, the reference's envelope (no name; the pipeline
and stack nested when hydrated), filters, the deprecated project routes and bad input."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers, new_project
from tests.tracking.pipeline_build.support import BUILDS, IMAGE, create_build
from tests.tracking.pipeline_run.support import create_pipeline, default_stack_id

Json = dict[str, Any]


async def test_create_stores_the_build_as_sent(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    pipeline = await create_pipeline(tracking, auth, default_project)
    stack_id = await default_stack_id(tracking, auth)
    build = await create_build(
        tracking, auth, default_project, pipeline=pipeline["id"], stack=stack_id
    )
    assert list(build) == ["body", "metadata", "resources", "id", "permission_denied"]
    assert list(build["body"]) == ["created", "updated", "user_id", "project_id"]
    metadata = build["metadata"]
    assert metadata["images"] == {"orchestrator": {**IMAGE, "requires_code_download": False}}
    assert (metadata["pipeline"]["name"], metadata["stack"]["id"]) == ("training", stack_id)
    assert metadata["pipeline"]["metadata"] is None
    assert (metadata["checksum"], metadata["duration"], metadata["is_local"]) == ("c1", 42, False)
    got = await tracking.get(f"{BUILDS}/{build['id']}", headers=auth)
    assert got.json() == build
    bare = await tracking.get(f"{BUILDS}/{build['id']}", params={"hydrate": "false"}, headers=auth)
    assert bare.json()["metadata"] is None


async def test_list_filters_and_scopes_by_project(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    local = await create_build(tracking, auth, default_project, is_local=True, checksum="x")
    remote = await create_build(tracking, auth, default_project, duration=7)
    other = await new_project(tracking, auth, "other")
    await create_build(tracking, auth, other)

    async def ids(*params: tuple[str, str]) -> list[str]:
        response = await tracking.get(BUILDS, params=list(params), headers=auth)
        assert response.status_code == 200, response.text
        return [item["id"] for item in response.json()["items"]]

    assert await ids() == [local["id"], remote["id"]]
    assert await ids(("is_local", "true")) == [local["id"]]
    assert await ids(("duration", "lt:10")) == [remote["id"]]
    assert await ids(("checksum", "x"), ("duration", "7"), ("logical_operator", "or")) == [
        local["id"],
        remote["id"],
    ]
    assert await ids(("sort_by", "desc:created")) == [remote["id"], local["id"]]
    assert len(await ids(("project", "other"))) == 1
    workspace = await tracking.get("/api/v1/workspaces/other/pipeline_builds", headers=auth)
    assert workspace.json()["total"] == 1
    assert (await tracking.get(BUILDS, params={"duration": "x"}, headers=auth)).status_code == 422
    unknown = await tracking.get(BUILDS, params={"project": "nowhere"}, headers=auth)
    assert unknown.status_code == 404


async def test_delete(tracking: httpx.AsyncClient, auth: Headers, default_project: Json) -> None:
    build = await create_build(tracking, auth, default_project)
    one = f"{BUILDS}/{build['id']}"
    assert (await tracking.delete(one, headers=auth)).json() is None
    assert (await tracking.get(one, headers=auth)).status_code == 404
    assert (await tracking.delete(one, headers=auth)).status_code == 404


async def test_bad_input(tracking: httpx.AsyncClient, auth: Headers, default_project: Json) -> None:
    project = default_project["id"]
    missing_flags = await tracking.post(BUILDS, json={"project": project}, headers=auth)
    assert missing_flags.status_code == 422
    body = {"project": project, "is_local": False, "contains_code": True}
    no_image = {**body, "images": {"orchestrator": {"dockerfile": "x"}}}
    assert (await tracking.post(BUILDS, json=no_image, headers=auth)).status_code == 422
    for key in ("stack", "pipeline"):
        response = await tracking.post(BUILDS, json={**body, key: str(uuid.uuid4())}, headers=auth)
        assert response.status_code == 404, key
        assert response.json()["detail"][0] == "KeyError"
    unknown = {**body, "project": str(uuid.uuid4())}
    assert (await tracking.post(BUILDS, json=unknown, headers=auth)).status_code == 404
    assert (await tracking.get(f"{BUILDS}/nope", headers=auth)).status_code == 422
