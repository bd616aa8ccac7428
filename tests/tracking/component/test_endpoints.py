"""``/api/v1/components`` against the reference's wire format."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers, names, new_user
from tests.tracking.component.support import COMPONENTS, create_component
from tracking.component.flavors import FLAVORS

ENVELOPE = ["body", "metadata", "resources", "id", "permission_denied", "name"]
Json = dict[str, Any]


async def post(tracking: httpx.AsyncClient, auth: Headers, **body: Any) -> httpx.Response:
    request = {"name": "store", "type": "artifact_store", "flavor": "local", **body}
    request.setdefault("configuration", {"path": "/tmp/store"})
    return await tracking.post(COMPONENTS, json=request, headers=auth)


async def listed(tracking: httpx.AsyncClient, auth: Headers, *params: tuple[str, str]) -> list[str]:
    return names(await tracking.get(COMPONENTS, params=list(params), headers=auth))


async def default_store(tracking: httpx.AsyncClient, auth: Headers) -> Json:
    page = await tracking.get(
        COMPONENTS, params={"type": "artifact_store", "name": "default"}, headers=auth
    )
    (store,) = page.json()["items"]
    component: Json = store
    return component


# --- the default stack's artifact store ---------------------------------------------------


async def test_default_artifact_store_path_is_absolute_and_exists(
    tracking: httpx.AsyncClient, auth: Headers, tmp_path: Path
) -> None:
    store = await default_store(tracking, auth)
    full = await tracking.get(f"{COMPONENTS}/{store['id']}", headers=auth)
    path = full.json()["metadata"]["configuration"]["path"]
    assert Path(path).is_absolute()
    assert await asyncio.to_thread(os.path.isdir, path)
    assert Path(path) == (tmp_path / "artifacts").resolve()


async def test_default_components_cannot_be_modified_or_deleted(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    url = f"{COMPONENTS}/{(await default_store(tracking, auth))['id']}"
    changed = await tracking.put(url, json={"configuration": {"path": "/elsewhere"}}, headers=auth)
    deleted = await tracking.delete(url, headers=auth)
    for response in (changed, deleted):
        assert response.status_code == 403
        assert response.json()["detail"][0] == "IllegalOperationError"


# --- envelopes and hydration --------------------------------------------------------------


async def test_create_returns_the_hydrated_component(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    component = await create_component(tracking, auth, "store")
    assert list(component) == ENVELOPE
    body = component["body"]
    assert list(body) == [
        "created",
        "updated",
        "user_id",
        "type",
        "flavor_name",
        "integration",
        "logo_url",
    ]
    assert (body["type"], body["flavor_name"], body["integration"]) == (
        "artifact_store",
        "local",
        "built-in",
    )
    assert component["metadata"] == {
        "configuration": {"path": "/tmp/stores/store"},
        "environment": {},
        "secrets": [],
        "labels": None,
        "connector_resource_id": None,
        "connector": None,
    }
    assert list(component["resources"]) == ["user", "flavor"]


async def test_creator_is_the_callers_user(tracking: httpx.AsyncClient, auth: Headers) -> None:
    component = await create_component(tracking, auth, "store")
    user = component["resources"]["user"]
    assert user["name"] == "default"
    assert (user["metadata"], user["resources"]) == (None, None)
    assert component["body"]["user_id"] == user["id"]


async def test_flavor_is_a_body_only_flavor_response(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    flavor = (await create_component(tracking, auth, "store"))["resources"]["flavor"]
    assert list(flavor) == ENVELOPE
    assert (flavor["metadata"], flavor["resources"]) == (None, None)
    body = flavor["body"]
    required = {"created", "updated", "type", "display_name", "integration", "source"}
    assert required <= set(body)
    assert body["source"] == "zenml.artifact_stores.local_artifact_store.LocalArtifactStoreFlavor"
    assert body["is_custom"] is False
    (registered,) = [f for f in FLAVORS if f.source == body["source"]]
    assert flavor["id"] == str(registered.id)


def test_flavor_ids_are_stable_and_distinct() -> None:
    ids = [f.id for f in FLAVORS]
    assert len(set(ids)) == len(ids)
    assert ids == [f.id for f in FLAVORS]
    assert all(i.version == 5 for i in ids)


def test_flavor_config_schemas_are_json_schemas_of_the_config() -> None:
    stores = [f for f in FLAVORS if f.component_type == "artifact_store"]
    assert [f.name for f in stores] == ["local", "s3"]
    for store in stores:
        schema = store.config_schema()
        assert schema["type"] == "object"
        assert schema["required"] == ["path"]
        assert schema["additionalProperties"] is False


async def test_get_is_hydrated_by_default_and_list_is_not(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    component = await create_component(tracking, auth, "store")
    one = (await tracking.get(f"{COMPONENTS}/{component['id']}", headers=auth)).json()
    assert one == component
    bare = await tracking.get(f"{COMPONENTS}/{component['id']}?hydrate=false", headers=auth)
    assert bare.json()["metadata"] is None
    assert bare.json()["resources"] == component["resources"]
    items = (await tracking.get(COMPONENTS, params={"name": "store"}, headers=auth)).json()["items"]
    assert items[0]["metadata"] is None
    assert items[0]["resources"] == component["resources"]
    hydrated = await tracking.get(
        COMPONENTS, params={"name": "store", "hydrate": "true"}, headers=auth
    )
    assert hydrated.json()["items"] == [component]


# --- create rules -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "configuration",
    [
        {"path": "relative/dir"},
        {"path": "s3://bucket/dir"},
        {"path": ""},
        {},
        {"path": "/a", "x": 1},
    ],
)
async def test_local_artifact_store_needs_only_an_absolute_path(
    tracking: httpx.AsyncClient, auth: Headers, configuration: Json
) -> None:
    response = await post(tracking, auth, configuration=configuration)
    assert response.status_code == 400
    assert response.json()["detail"][0] == "ValueError"


async def test_unknown_flavor_is_404(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await post(tracking, auth, flavor="gcp")
    assert response.status_code == 404
    assert response.json()["detail"] == [
        "KeyError",
        "No flavor with name 'gcp' and type 'artifact_store' exists.",
    ]


async def test_unknown_type_is_422(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await post(tracking, auth, type="toaster")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "type"]


async def test_name_with_a_line_break_is_422(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await post(tracking, auth, name="two\nlines")
    assert response.status_code == 422


async def test_duplicate_type_and_name_is_409(tracking: httpx.AsyncClient, auth: Headers) -> None:
    await create_component(tracking, auth, "store")
    response = await post(tracking, auth)
    assert response.status_code == 409
    assert response.json()["detail"][0] == "EntityExistsError"


async def test_same_name_with_another_type_is_allowed(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    await create_component(tracking, auth, "local")
    await create_component(tracking, auth, "local", "orchestrator")
    assert await listed(tracking, auth, ("name", "local")) == ["local", "local"]


async def test_an_unknown_secret_and_any_connector_are_404(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    with_secret = await post(tracking, auth, secrets=["db-password"])
    with_connector = await post(tracking, auth, connector=str(uuid.uuid4()))
    for response in (with_secret, with_connector):
        assert response.status_code == 404
        assert response.json()["detail"][0] == "KeyError"


# --- update and delete --------------------------------------------------------------------


async def test_update_validates_and_replaces_the_configuration(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    component = await create_component(tracking, auth, "store")
    url = f"{COMPONENTS}/{component['id']}"
    bad = await tracking.put(url, json={"configuration": {"path": "rel"}}, headers=auth)
    assert bad.status_code == 400
    good = await tracking.put(
        url, json={"name": "renamed", "configuration": {"path": "/srv/a"}}, headers=auth
    )
    assert good.status_code == 200, good.text
    assert good.json()["name"] == "renamed"
    assert good.json()["metadata"]["configuration"] == {"path": "/srv/a"}
    assert good.json()["resources"]["user"]["name"] == "default"


async def test_rename_to_a_taken_name_of_the_same_type_is_409(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    component = await create_component(tracking, auth, "store")
    await create_component(tracking, auth, "other")
    response = await tracking.put(
        f"{COMPONENTS}/{component['id']}", json={"name": "other"}, headers=auth
    )
    assert response.status_code == 409


async def test_delete_answers_null_and_the_component_is_gone(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    url = f"{COMPONENTS}/{(await create_component(tracking, auth, 'store'))['id']}"
    response = await tracking.delete(url, headers=auth)
    assert (response.status_code, response.json()) == (200, None)
    gone = await tracking.get(url, headers=auth)
    assert gone.status_code == 404
    assert gone.json()["detail"][0] == "KeyError"


async def test_component_in_a_stack_cannot_be_deleted(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    store = await create_component(tracking, auth, "store")
    runner = await create_component(tracking, auth, "runner", "orchestrator")
    stack = await tracking.post(
        "/api/v1/stacks",
        json={
            "name": "prod",
            "components": {"artifact_store": [store["id"]], "orchestrator": [runner["id"]]},
        },
        headers=auth,
    )
    assert stack.status_code == 200, stack.text
    response = await tracking.delete(f"{COMPONENTS}/{store['id']}", headers=auth)
    assert response.status_code == 403
    assert "part of 1 stacks" in response.json()["detail"][1]


async def test_malformed_component_id_is_422(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.get(f"{COMPONENTS}/not-a-uuid", headers=auth)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["path", "component_id"]


# --- filters, sorting, paging -------------------------------------------------------------


@pytest.fixture
async def several(tracking: httpx.AsyncClient, auth: Headers) -> Json:
    """``default`` (the default store), stores ``alpha`` and ``beta``, orchestrator ``runner``,
    and the stack ``prod`` of ``alpha`` and ``runner``."""
    alpha = await create_component(tracking, auth, "alpha")
    await create_component(tracking, auth, "beta")
    runner = await create_component(tracking, auth, "runner", "orchestrator")
    stack = await tracking.post(
        "/api/v1/stacks",
        json={
            "name": "prod",
            "components": {"artifact_store": [alpha["id"]], "orchestrator": [runner["id"]]},
        },
        headers=auth,
    )
    assert stack.status_code == 200, stack.text
    created: Json = stack.json()
    return created


@pytest.mark.parametrize(
    ("param", "value", "expected"),
    [
        # The default stack has a `default` artifact store and a `default` orchestrator.
        ("name", "alpha", ["alpha"]),
        ("name", "contains:a", ["alpha", "beta", "default", "default"]),
        ("flavor", "local", ["alpha", "beta", "default", "default", "runner"]),
        ("flavor", "notequals:local", []),
        ("type", "orchestrator", ["default", "runner"]),
        ("type", 'oneof:["orchestrator","deployer"]', ["default", "runner"]),
        ("created", "gt:2000-01-01 00:00:00", ["alpha", "beta", "default", "default", "runner"]),
        ("updated", "lt:2000-01-01 00:00:00", []),
        ("user", "isnull:", ["default", "default"]),
        ("scope_type", "artifact_store", ["alpha", "beta", "default"]),
        ("connector_id", "isnull:", ["alpha", "beta", "default", "default", "runner"]),
        ("connector_id", str(uuid.UUID(int=7)), []),
    ],
)
async def test_filter(
    tracking: httpx.AsyncClient,
    auth: Headers,
    several: Json,
    param: str,
    value: str,
    expected: list[str],
) -> None:
    assert sorted(await listed(tracking, auth, (param, value))) == expected


async def test_filter_by_stack_id(
    tracking: httpx.AsyncClient, auth: Headers, several: Json
) -> None:
    listed_names = await listed(tracking, auth, ("stack_id", several["id"]))
    assert sorted(listed_names) == ["alpha", "runner"]


async def test_filter_by_id_and_user(
    tracking: httpx.AsyncClient, auth: Headers, several: Json
) -> None:
    user_id = several["body"]["user_id"]
    assert sorted(await listed(tracking, auth, ("user", user_id))) == ["alpha", "beta", "runner"]
    (alpha,) = (await tracking.get(COMPONENTS, params={"name": "alpha"}, headers=auth)).json()[
        "items"
    ]
    assert await listed(tracking, auth, ("id", alpha["id"])) == ["alpha"]


async def test_scope_user_is_anded_on_or_filters(
    tracking: httpx.AsyncClient, auth: Headers, identity_app: LifespanApp, several: Json
) -> None:
    ann_id, ann = await new_user(identity_app, auth, "ann")
    await create_component(tracking, ann, "anns")
    params = [("name", "anns"), ("name", "alpha"), ("logical_operator", "or")]
    assert sorted(await listed(tracking, auth, *params)) == ["alpha", "anns"]
    assert await listed(tracking, auth, *params, ("scope_user", ann_id)) == ["anns"]


async def test_scope_user_must_be_a_uuid(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.get(COMPONENTS, params={"scope_user": "ann"}, headers=auth)
    assert response.status_code == 422


@pytest.mark.parametrize(
    ("sort_by", "expected"),
    [
        ("name", ["alpha", "beta", "default", "default", "runner"]),
        ("desc:name", ["runner", "default", "default", "beta", "alpha"]),
        ("created", ["default", "default", "alpha", "beta", "runner"]),
        ("desc:updated", ["runner", "beta", "alpha", "default", "default"]),
    ],
)
async def test_sort(
    tracking: httpx.AsyncClient, auth: Headers, several: Json, sort_by: str, expected: list[str]
) -> None:
    assert await listed(tracking, auth, ("sort_by", sort_by)) == expected


async def test_sort_by_type_then_id(
    tracking: httpx.AsyncClient, auth: Headers, several: Json
) -> None:
    items = (await tracking.get(COMPONENTS, params={"sort_by": "desc:type"}, headers=auth)).json()
    keys = [(c["body"]["type"], uuid.UUID(c["id"])) for c in items["items"]]
    assert keys == sorted(keys, reverse=True)
    assert keys[0][0] == "orchestrator"


async def test_sort_by_flavor_then_id(
    tracking: httpx.AsyncClient, auth: Headers, several: Json
) -> None:
    items = (await tracking.get(COMPONENTS, params={"sort_by": "flavor"}, headers=auth)).json()
    keys = [(c["body"]["flavor_name"], uuid.UUID(c["id"])) for c in items["items"]]
    assert keys == sorted(keys)


async def test_sort_by_id_follows_the_ids(
    tracking: httpx.AsyncClient, auth: Headers, several: Json
) -> None:
    items = (await tracking.get(COMPONENTS, params={"sort_by": "desc:id"}, headers=auth)).json()
    ids = [uuid.UUID(c["id"]) for c in items["items"]]
    assert ids == sorted(ids, reverse=True)


async def test_unknown_sort_key_is_422(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.get(COMPONENTS, params={"sort_by": "configuration"}, headers=auth)
    assert response.status_code == 422


async def test_malformed_filter_is_422(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.get(COMPONENTS, params={"stack_id": 'oneof:["x"]'}, headers=auth)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "stack_id"]


async def test_page_past_the_end_is_an_empty_page(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.get(COMPONENTS, params={"page": "3", "size": "1"}, headers=auth)
    assert response.status_code == 200
    assert response.json()["items"] == []


# --- authentication -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", COMPONENTS),
        ("POST", COMPONENTS),
        ("GET", f"{COMPONENTS}/{uuid.UUID(int=1)}"),
        ("PUT", f"{COMPONENTS}/{uuid.UUID(int=1)}"),
        ("DELETE", f"{COMPONENTS}/{uuid.UUID(int=1)}"),
    ],
)
async def test_requests_without_a_token_are_401(
    tracking: httpx.AsyncClient, method: str, path: str
) -> None:
    response = await tracking.request(method, path, json={})
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
