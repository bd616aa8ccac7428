"""``/models``: the reference's shape, names, tags, updates, the latest version, the
deprecated workspace path, and deletion taking the versions along."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.model.support import MODELS, VERSIONS, create_model, create_model_version

Json = dict[str, Any]


async def test_new_model_has_the_reference_shape(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = await create_model(
        tracking, auth, default_project, "m1", license="MIT", tags=["b", "a"]
    )
    assert model["name"] == "m1"
    assert list(model["body"]) == ["created", "updated", "user_id", "project_id"]
    assert model["metadata"] == {
        "license": "MIT",
        "description": None,
        "audience": None,
        "use_cases": None,
        "limitations": None,
        "trade_offs": None,
        "ethics": None,
        "save_models_to_registry": True,
    }
    resources = model["resources"]
    assert [t["name"] for t in resources["tags"]] == ["a", "b"]
    assert (resources["latest_version_name"], resources["latest_version_id"]) == (None, None)
    assert resources["visualizations"] == []


async def test_duplicate_name_is_409(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    await create_model(tracking, auth, default_project, "m1")
    again = await tracking.post(
        MODELS, json={"project": default_project["id"], "name": "m1"}, headers=auth
    )
    assert again.status_code == 409
    assert again.json()["detail"][0] == "EntityExistsError"


async def test_name_with_a_tab_is_400(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    response = await tracking.post(
        MODELS, json={"project": default_project["id"], "name": "a\tb"}, headers=auth
    )
    assert response.status_code == 400
    assert response.json()["detail"][0] == "ValueError"


async def test_update_changes_given_fields_and_tags(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = await create_model(tracking, auth, default_project, "m1", description="d", tags=["x"])
    response = await tracking.put(
        f"{MODELS}/{model['id']}",
        json={"name": "m2", "license": "MIT", "add_tags": ["y"], "remove_tags": ["x"]},
        headers=auth,
    )
    assert response.status_code == 200, response.text
    updated = response.json()
    assert updated["name"] == "m2"
    assert (updated["metadata"]["license"], updated["metadata"]["description"]) == ("MIT", "d")
    assert [t["name"] for t in updated["resources"]["tags"]] == ["y"]


async def test_latest_version_is_the_highest_numbered(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = await create_model(tracking, auth, default_project)
    await create_model_version(tracking, auth, model)
    second = await create_model_version(tracking, auth, model, name="v-two")
    got = (await tracking.get(f"{MODELS}/{model['id']}", headers=auth)).json()
    assert got["resources"]["latest_version_name"] == "v-two"
    assert got["resources"]["latest_version_id"] == second["id"]


async def test_list_filters_by_name_and_tag_and_sorts_by_latest_version(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    older = await create_model(tracking, auth, default_project, "older", tags=["t"])
    await create_model(tracking, auth, default_project, "newer")
    await create_model_version(tracking, auth, older)
    params = {"sort_by": "desc:latest_version"}
    page = (await tracking.get(MODELS, params=params, headers=auth)).json()
    assert [m["name"] for m in page["items"]] == ["older", "newer"]
    assert page["items"][0]["metadata"] is None
    by_tag = (await tracking.get(MODELS, params={"tags": "t"}, headers=auth)).json()
    assert [m["name"] for m in by_tag["items"]] == ["older"]
    by_name = (await tracking.get(MODELS, params={"name": "contains:new"}, headers=auth)).json()
    assert [m["name"] for m in by_name["items"]] == ["newer"]


async def test_workspace_path_creates_in_the_named_project(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    response = await tracking.post(
        f"/api/v1/workspaces/{default_project['name']}/models",
        json={"project": str(uuid.uuid4()), "name": "legacy"},
        headers=auth,
    )
    assert response.status_code == 200, response.text
    assert response.json()["body"]["project_id"] == default_project["id"]


async def test_delete_takes_the_versions_along(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = await create_model(tracking, auth, default_project)
    version = await create_model_version(tracking, auth, model)
    deleted = await tracking.delete(f"{MODELS}/{model['id']}", headers=auth)
    assert deleted.status_code == 200, deleted.text
    assert (await tracking.get(f"{MODELS}/{model['id']}", headers=auth)).status_code == 404
    gone = await tracking.get(f"{VERSIONS}/{version['id']}", headers=auth)
    assert gone.status_code == 404
    assert gone.json()["detail"][0] == "KeyError"
