"""Custom flavors, as ``zenml flavor register`` sends them and the reference keeps them:
unique by (type, name) with the built-in ones too, listed and got with them, changed and
deleted by any user (the reference's open-source server has no finer rule), a built-in
flavor never; components of a custom flavor keep their configuration as given."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers, new_user
from tests.tracking.artifact_version.support import default_store
from tracking.component.flavors import FLAVORS

Json = dict[str, Any]
FLAVORS_PATH = "/api/v1/flavors"
SCHEMA = {
    "title": "MyOrchestratorConfig",
    "type": "object",
    "properties": {"endpoint": {"type": "string"}, "retries": {"type": "integer"}},
}


def registration(name: str = "my_orchestrator", **changes: Any) -> Json:
    """What the client's ``Flavor.to_model(integration="custom", is_custom=True)`` sends."""
    return {
        "name": name,
        "display_name": None,
        "type": "orchestrator",
        "config_schema": SCHEMA,
        "connector_type": None,
        "connector_resource_type": None,
        "connector_resource_id_attr": None,
        "source": "flavors.my_flavor.MyOrchestratorFlavor",
        "integration": "custom",
        "logo_url": None,
        "docs_url": None,
        "sdk_docs_url": None,
        "is_custom": True,
        **changes,
    }


async def register(tracking: httpx.AsyncClient, auth: Headers, **changes: Any) -> Json:
    response = await tracking.post(FLAVORS_PATH, json=registration(**changes), headers=auth)
    assert response.status_code == 200, response.text
    created: Json = response.json()
    return created


@pytest.fixture
async def ann(identity_app: LifespanApp, auth: Headers) -> tuple[str, Headers]:
    return await new_user(identity_app, auth, "ann")


def built_in(component_type: str = "artifact_store", name: str = "local") -> str:
    return str(next(f.id for f in FLAVORS if (f.component_type, f.name) == (component_type, name)))


async def test_a_registered_flavor_answers_the_reference_shape(
    tracking: httpx.AsyncClient, auth: Headers, ann: tuple[str, Headers]
) -> None:
    user_id, headers = ann
    created = await register(tracking, headers)
    assert created["name"] == "my_orchestrator"
    body = created["body"]
    assert (body["type"], body["display_name"], body["integration"]) == (
        "orchestrator",
        "My Orchestrator",
        "custom",
    )
    assert (body["is_custom"], body["user_id"], body["source"]) == (
        True,
        user_id,
        "flavors.my_flavor.MyOrchestratorFlavor",
    )
    assert created["metadata"]["config_schema"] == SCHEMA
    assert created["resources"]["user"]["id"] == user_id
    got = await tracking.get(f"{FLAVORS_PATH}/{created['id']}", headers=auth)
    assert got.json() == created
    bare = await tracking.get(f"{FLAVORS_PATH}/{created['id']}?hydrate=false", headers=auth)
    assert bare.json()["metadata"] is None


async def test_a_flavor_sent_as_not_custom_has_no_user(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    created = await register(tracking, auth, is_custom=False, display_name="Mine")
    assert (created["body"]["user_id"], created["resources"]["user"]) == (None, None)
    assert (created["body"]["is_custom"], created["body"]["display_name"]) == (False, "Mine")


async def test_type_and_name_are_unique_with_the_built_in_flavors_too(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    await register(tracking, auth)
    again = await tracking.post(FLAVORS_PATH, json=registration(), headers=auth)
    assert again.status_code == 409
    assert again.json()["detail"] == [
        "EntityExistsError",
        "Unable to register 'orchestrator' flavor with name 'my_orchestrator' and type "
        "'orchestrator': Found an existing flavor with the same name and type.",
    ]
    local = await tracking.post(FLAVORS_PATH, json=registration("local"), headers=auth)
    assert local.status_code == 409
    # Another type, the same name: a flavor of its own.
    await register(tracking, auth, type="step_operator")


async def test_bad_registrations_are_refused_in_the_error_shape(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    for bad in (
        registration(type="spaceship"),
        registration(config_schema="not an object"),
        registration(name="x" * 256),
        {k: v for k, v in registration().items() if k != "source"},
    ):
        response = await tracking.post(FLAVORS_PATH, json=bad, headers=auth)
        assert response.status_code == 422, response.text
    huge = registration(config_schema={"description": "x" * 70000})
    response = await tracking.post(FLAVORS_PATH, json=huge, headers=auth)
    assert response.status_code == 400
    assert response.json()["detail"][0] == "ValueError"
    garbled = await tracking.post(FLAVORS_PATH, content=b"{", headers=auth)
    assert garbled.status_code in (400, 422)
    assert (await tracking.post(FLAVORS_PATH, json=registration())).status_code == 401


async def test_an_empty_name_and_source_are_taken_as_the_reference_takes_them(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    created = await register(tracking, auth, name="", source="")
    assert (created["name"], created["body"]["source"]) == ("", "")


async def test_built_in_and_custom_flavors_are_listed_together(
    tracking: httpx.AsyncClient, auth: Headers, ann: tuple[str, Headers]
) -> None:
    mine = await register(tracking, ann[1])
    total = (await tracking.get(FLAVORS_PATH, headers=auth)).json()["total"]
    assert total == len(FLAVORS) + 1
    params = {"type": "orchestrator", "sort_by": "name", "hydrate": "true"}
    listed = (await tracking.get(FLAVORS_PATH, params=params, headers=auth)).json()["items"]
    assert [(f["name"], f["body"]["is_custom"]) for f in listed] == [
        ("local", False),
        ("my_orchestrator", True),
    ]
    assert listed[1]["metadata"]["config_schema"] == SCHEMA
    assert listed[1]["resources"]["user"]["id"] == ann[0]
    for filters in ({"user": ann[0]}, {"scope_user": ann[0]}, {"integration": "custom"}):
        found = await tracking.get(FLAVORS_PATH, params=filters, headers=auth)
        assert [f["id"] for f in found.json()["items"]] == [mine["id"]], filters
    # The display name filtered is the stored one, none here, as the reference's.
    named = await tracking.get(FLAVORS_PATH, params={"display_name": "contains:Orch"}, headers=auth)
    assert named.json()["items"] == []


async def test_any_user_changes_a_custom_flavor(
    tracking: httpx.AsyncClient, auth: Headers, ann: tuple[str, Headers]
) -> None:
    created = await register(tracking, auth)
    one = f"{FLAVORS_PATH}/{created['id']}"
    change = {"display_name": "Mine", "config_schema": {"type": "object"}, "name": None}
    response = await tracking.put(one, json=change, headers=ann[1])
    assert response.status_code == 200, response.text
    updated = response.json()
    assert (updated["name"], updated["body"]["display_name"]) == ("my_orchestrator", "Mine")
    assert updated["metadata"]["config_schema"] == {"type": "object"}
    assert updated["body"]["user_id"] == created["body"]["user_id"]
    assert updated["body"]["updated"] > created["body"]["updated"]
    renamed = await tracking.put(one, json={"name": "theirs"}, headers=auth)
    assert renamed.json()["name"] == "theirs"
    await register(tracking, auth)
    clash = await tracking.put(one, json={"name": "my_orchestrator"}, headers=auth)
    assert clash.status_code == 409
    onto_built_in = await tracking.put(one, json={"name": "local"}, headers=auth)
    assert onto_built_in.status_code == 409
    bad = await tracking.put(one, json={"type": "spaceship"}, headers=auth)
    assert bad.status_code == 422
    missing = await tracking.put(f"{FLAVORS_PATH}/{uuid.uuid4()}", json={}, headers=auth)
    assert (missing.status_code, missing.json()["detail"][0]) == (404, "KeyError")
    assert (await tracking.put(one, json={})).status_code == 401


async def test_a_built_in_flavor_is_neither_changed_nor_deleted(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    one = f"{FLAVORS_PATH}/{built_in()}"
    before = (await tracking.get(one, headers=auth)).json()
    for response in (
        await tracking.put(one, json={"display_name": "Mine"}, headers=auth),
        await tracking.delete(one, headers=auth),
    ):
        assert response.status_code == 403
        assert response.json()["detail"][0] == "IllegalOperationError"
    assert (await tracking.get(one, headers=auth)).json() == before


async def test_a_custom_flavors_components_keep_their_configuration(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    flavor = await register(tracking, auth)
    body = {
        "name": "mine",
        "type": "orchestrator",
        "flavor": "my_orchestrator",
        "configuration": {"endpoint": "https://orch.example", "anything": [1]},
    }
    response = await tracking.post("/api/v1/components", json=body, headers=auth)
    assert response.status_code == 200, response.text
    component = response.json()
    assert component["metadata"]["configuration"] == body["configuration"]
    nested = component["resources"]["flavor"]
    assert (nested["id"], nested["body"]["is_custom"]) == (flavor["id"], True)
    assert component["body"]["integration"] == "custom"
    stack = await tracking.post(
        "/api/v1/stacks",
        json={"name": "custom", "components": {"orchestrator": [component["id"]],
              "artifact_store": [(await default_store(tracking, auth))[0]]}},
        headers=auth,
    )  # fmt: skip
    assert stack.status_code == 200, stack.text
    in_stack = stack.json()["metadata"]["components"]["orchestrator"][0]
    assert in_stack["body"]["flavor_name"] == "my_orchestrator"
    # A built-in flavor's components are still checked here.
    local = {**body, "name": "strict", "flavor": "local"}
    refused = await tracking.post("/api/v1/components", json=local, headers=auth)
    assert refused.status_code == 400
    unknown = {**body, "name": "nowhere", "flavor": "nowhere"}
    missing = await tracking.post("/api/v1/components", json=unknown, headers=auth)
    assert (missing.status_code, missing.json()["detail"][0]) == (404, "KeyError")


async def test_a_flavor_in_use_is_not_deleted_renamed_or_retyped(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    flavor = await register(tracking, auth)
    one = f"{FLAVORS_PATH}/{flavor['id']}"
    body = {"name": "mine", "type": "orchestrator", "flavor": "my_orchestrator",
            "configuration": {}}  # fmt: skip
    component = (await tracking.post("/api/v1/components", json=body, headers=auth)).json()
    for response in (
        await tracking.delete(one, headers=auth),
        await tracking.put(one, json={"name": "other"}, headers=auth),
        await tracking.put(one, json={"type": "step_operator"}, headers=auth),
    ):
        assert response.status_code == 403, response.text
        assert response.json()["detail"][0] == "IllegalOperationError"
    kept = await tracking.put(one, json={"source": "flavors.v2.Flavor"}, headers=auth)
    assert kept.status_code == 200
    await tracking.delete(f"/api/v1/components/{component['id']}", headers=auth)
    deleted = await tracking.delete(one, headers=auth)
    assert (deleted.status_code, deleted.json()) == (200, None)
    assert (await tracking.get(one, headers=auth)).status_code == 404
    assert (await tracking.delete(one, headers=auth)).status_code == 404
