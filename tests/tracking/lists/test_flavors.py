"""``/flavors``: the built-in flavors tracking knows, listed with the reference's filters
and got by id, as the components that use them show them."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers
from tracking.component.flavors import FLAVORS

Json = dict[str, Any]
FLAVORS_PATH = "/api/v1/flavors"


async def names(tracking: httpx.AsyncClient, auth: Headers, *params: tuple[str, str]) -> list[str]:
    response = await tracking.get(FLAVORS_PATH, params=list(params), headers=auth)
    assert response.status_code == 200, response.text
    return [f"{item['body']['type']}/{item['name']}" for item in response.json()["items"]]


async def test_lists_every_flavor_known(tracking: httpx.AsyncClient, auth: Headers) -> None:
    listed = await names(tracking, auth, ("sort_by", "type"), ("size", "100"))
    assert sorted(listed) == sorted(f"{f.component_type}/{f.name}" for f in FLAVORS)
    assert listed == sorted(listed, key=lambda name: name.split("/")[0])


async def test_filters_and_pages(tracking: httpx.AsyncClient, auth: Headers) -> None:
    assert await names(tracking, auth, ("type", "artifact_store"), ("sort_by", "name")) == [
        "artifact_store/local",
        "artifact_store/s3",
    ]
    assert await names(tracking, auth, ("integration", "s3")) == ["artifact_store/s3"]
    assert await names(tracking, auth, ("name", "local"), ("type", "orchestrator")) == [
        "orchestrator/local"
    ]
    assert await names(tracking, auth, ("display_name", "contains:S3")) == ["artifact_store/s3"]
    page = await tracking.get(FLAVORS_PATH, params={"size": 1, "page": 2}, headers=auth)
    assert (page.json()["total"], len(page.json()["items"])) == (len(FLAVORS), 1)
    past = await tracking.get(FLAVORS_PATH, params={"size": 100, "page": 2}, headers=auth)
    assert (past.status_code, past.json()["index"], past.json()["items"]) == (200, 2, [])
    bad = await tracking.get(FLAVORS_PATH, params={"created": "yesterday"}, headers=auth)
    assert bad.status_code == 422


async def test_get_by_id_matches_what_a_component_nests(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    components = await tracking.get(
        "/api/v1/components", params={"name": "default", "type": "artifact_store"}, headers=auth
    )
    nested = components.json()["items"][0]["resources"]["flavor"]
    response = await tracking.get(f"{FLAVORS_PATH}/{nested['id']}", headers=auth)
    assert response.status_code == 200, response.text
    flavor = response.json()
    assert (flavor["id"], flavor["name"], flavor["body"]) == (
        nested["id"],
        nested["name"],
        nested["body"],
    )
    assert flavor["metadata"]["config_schema"]["properties"]["path"]["type"] == "string"
    assert flavor["resources"] == {"user": None}
    bare = await tracking.get(f"{FLAVORS_PATH}/{nested['id']}?hydrate=false", headers=auth)
    assert bare.json()["metadata"] is None


async def test_unknown_ids_are_404(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.get(f"{FLAVORS_PATH}/{uuid.uuid4()}", headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"][0] == "KeyError"
    assert (await tracking.get(f"{FLAVORS_PATH}/s3", headers=auth)).status_code == 422


async def test_a_user_filter_matches_no_flavor(tracking: httpx.AsyncClient, auth: Headers) -> None:
    # The flavors tracking knows belong to no user: a user filter, even an empty one,
    # matches none of them.
    for name, value in [("user", ""), ("user", "default"), ("scope_user", str(uuid.uuid4()))]:
        response = await tracking.get(FLAVORS_PATH, params={name: value}, headers=auth)
        assert response.status_code == 200, (name, value, response.text)
        assert response.json()["items"] == [], (name, value)
