"""``/model_versions``: numbering (gapless under concurrent creation), names, stages and
their promotion, the lists and their filters, the deprecated workspace path."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers, statements
from tests.tracking.model.support import MODELS, VERSIONS, create_model, create_model_version

Json = dict[str, Any]


async def test_versions_are_numbered_and_named_after_their_number(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = await create_model(tracking, auth, default_project)
    first = await create_model_version(tracking, auth, model, tags=["t"])
    named = await create_model_version(tracking, auth, model, name="best", description="d")
    assert (first["name"], first["body"]["number"]) == ("1", 1)
    assert (named["name"], named["body"]["number"]) == ("best", 2)
    assert named["body"]["model"]["id"] == model["id"]
    assert named["body"]["model"]["metadata"] is None
    assert named["metadata"] == {"description": "d", "run_metadata": {}}
    assert named["resources"]["services"] == {
        "index": 1,
        "max_size": 5,
        "total_pages": 1,
        "total": 0,
        "items": [],
    }
    assert [t["name"] for t in first["resources"]["tags"]] == ["t"]


async def test_concurrent_creations_number_one_to_n_without_gaps(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = await create_model(tracking, auth, default_project)
    made = await asyncio.gather(*(create_model_version(tracking, auth, model) for _ in range(8)))
    assert sorted(v["body"]["number"] for v in made) == list(range(1, 9))


async def test_numeric_stage_and_duplicate_names_are_refused(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = await create_model(tracking, auth, default_project)
    await create_model_version(tracking, auth, model, name="v")
    base = {"project": default_project["id"], "model": model["id"]}
    for name, status in (("12", 400), ("Production", 400), ("v", 409)):
        response = await tracking.post(VERSIONS, json={**base, "name": name}, headers=auth)
        assert response.status_code == status, (name, response.text)


async def test_unknown_model_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    body = {"project": default_project["id"], "model": str(uuid.uuid4())}
    response = await tracking.post(VERSIONS, json=body, headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"][0] == "KeyError"


async def test_promotion_needs_force_when_the_stage_is_taken(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = await create_model(tracking, auth, default_project)
    one = await create_model_version(tracking, auth, model)
    two = await create_model_version(tracking, auth, model)
    promoted = await tracking.put(
        f"{VERSIONS}/{one['id']}", json={"stage": "production"}, headers=auth
    )
    assert promoted.json()["body"]["stage"] == "production"
    refused = await tracking.put(
        f"{VERSIONS}/{two['id']}", json={"stage": "production"}, headers=auth
    )
    assert refused.status_code == 500
    assert refused.json()["detail"] == [
        "RuntimeError",
        "Model version 1 is in production, but `force` flag is False.",
    ]
    forced = await tracking.put(
        f"{VERSIONS}/{two['id']}", json={"stage": "production", "force": True}, headers=auth
    )
    assert forced.json()["body"]["stage"] == "production"
    archived = await tracking.get(f"{VERSIONS}/{one['id']}", headers=auth)
    assert archived.json()["body"]["stage"] == "archived"


async def test_unknown_stage_is_422(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = await create_model(tracking, auth, default_project)
    version = await create_model_version(tracking, auth, model)
    response = await tracking.put(f"{VERSIONS}/{version['id']}", json={"stage": "x"}, headers=auth)
    assert response.status_code == 422


async def test_update_renames_describes_and_tags(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = await create_model(tracking, auth, default_project)
    version = await create_model_version(tracking, auth, model, tags=["a"])
    await create_model_version(tracking, auth, model, name="taken")
    one = f"{VERSIONS}/{version['id']}"
    body = {"name": "new", "description": "d", "add_tags": ["b"], "remove_tags": ["a"]}
    updated = (await tracking.put(one, json=body, headers=auth)).json()
    assert (updated["name"], updated["metadata"]["description"]) == ("new", "d")
    assert [t["name"] for t in updated["resources"]["tags"]] == ["b"]
    clash = await tracking.put(one, json={"name": "taken"}, headers=auth)
    assert clash.status_code == 409


async def test_lists_by_model_name_or_id_and_by_filters(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = await create_model(tracking, auth, default_project, "m1")
    other = await create_model(tracking, auth, default_project, "m2")
    for _ in range(3):
        await create_model_version(tracking, auth, model)
    await create_model_version(tracking, auth, other, stage="staging")

    async def numbers(path: str, **params: str) -> list[int]:
        response = await tracking.get(path, params=params, headers=auth)
        assert response.status_code == 200, response.text
        return [v["body"]["number"] for v in response.json()["items"]]

    assert await numbers(f"{MODELS}/m1/model_versions", sort_by="asc:number") == [1, 2, 3]
    assert await numbers(f"{MODELS}/{model['id']}/model_versions", number="gte:2") == [2, 3]
    assert await numbers(VERSIONS, model="m2") == [1]
    assert await numbers(VERSIONS, stage="staging") == [1]
    assert await numbers(VERSIONS, model="nope") == []
    # The model scopes the list whatever joins the other filters.
    assert await numbers(VERSIONS, model="m1", logical_operator="or", number="1") == [1]


async def test_workspace_path_takes_the_model_from_the_path(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = await create_model(tracking, auth, default_project)
    response = await tracking.post(
        f"/api/v1/workspaces/{default_project['name']}/models/{model['id']}/model_versions",
        json={"project": default_project["id"], "model": str(uuid.uuid4())},
        headers=auth,
    )
    assert response.status_code == 200, response.text
    assert response.json()["body"]["model"]["id"] == model["id"]


async def test_delete_keeps_the_numbering_of_the_others(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = await create_model(tracking, auth, default_project)
    first = await create_model_version(tracking, auth, model)
    second = await create_model_version(tracking, auth, model)
    assert (await tracking.delete(f"{VERSIONS}/{second['id']}", headers=auth)).status_code == 200
    assert (await tracking.get(f"{VERSIONS}/{second['id']}", headers=auth)).status_code == 404
    third = await create_model_version(tracking, auth, model)
    assert third["body"]["number"] == 2
    assert (await tracking.get(f"{VERSIONS}/{first['id']}", headers=auth)).status_code == 200


async def test_model_name_or_id_query_parameter_scopes_the_list(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    first = await create_model(tracking, auth, default_project, "m1")
    second = await create_model(tracking, auth, default_project, "m2")
    await create_model_version(tracking, auth, first)
    mine = await create_model_version(tracking, auth, second)
    params = {"model_name_or_id": "m2", "model": "m1"}
    listed = (await tracking.get(VERSIONS, params=params, headers=auth)).json()
    assert [v["id"] for v in listed["items"]] == [mine["id"]]


async def test_a_page_costs_the_same_statements_whatever_its_size(
    tracking_app: LifespanApp, tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    model = await create_model(tracking, auth, default_project)
    for _ in range(12):
        await create_model_version(tracking, auth, model, tags=["t"])
    counts = []
    for size in (2, 12):
        with statements(tracking_app.state["engine"]) as seen:
            response = await tracking.get(
                VERSIONS, params={"size": size, "model": "m1", "hydrate": "true"}, headers=auth
            )
        assert len(response.json()["items"]) == size
        counts.append(len([s for s in seen if s.lstrip().upper().startswith("SELECT")]))
    # The project, the model's id, the count, the page, the models, the tags, the metadata.
    assert counts[0] == counts[1] == 7
