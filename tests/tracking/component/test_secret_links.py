"""Components' and stacks' linked secrets (the reference's ``secrets``, ``add_secrets`` and
``remove_secrets``) and secret references in a configuration: stored, rendered, and never
showing another user's private secret."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers, new_user
from tests.tracking.component.support import COMPONENTS
from tests.tracking.secret.support import SECRETS, create_secret

STACKS = "/api/v1/stacks"
Json = dict[str, Any]
User = tuple[str, Headers]
HIDDEN = "not found or is private and not owned by the current user"


@pytest.fixture
async def ann(identity_app: LifespanApp, auth: Headers) -> User:
    return await new_user(identity_app, auth, "ann")


async def orchestrator(
    tracking: httpx.AsyncClient, auth: Headers, name: str, **extra: Any
) -> httpx.Response:
    body = {"name": name, "type": "orchestrator", "flavor": "local", "configuration": {}}
    return await tracking.post(COMPONENTS, json={**body, **extra}, headers=auth)


async def linked(tracking: httpx.AsyncClient, auth: Headers, url: str) -> list[str]:
    response = await tracking.get(url, headers=auth)
    assert response.status_code == 200, response.text
    secrets: list[str] = response.json()["metadata"]["secrets"]
    return secrets


async def test_component_links_secrets_by_name_or_id_and_keeps_its_environment(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    db = await create_secret(tracking, auth, "db")
    api = await create_secret(tracking, auth, "api")
    created = await orchestrator(
        tracking, auth, "o", secrets=["db", api["id"], "db"], environment={"A": "1"}
    )
    assert created.status_code == 200, created.text
    metadata = created.json()["metadata"]
    assert (metadata["secrets"], metadata["environment"]) == ([db["id"], api["id"]], {"A": "1"})
    url = f"{COMPONENTS}/{created.json()['id']}"
    assert await linked(tracking, auth, url) == [db["id"], api["id"]]


async def test_update_adds_and_removes_secrets_and_replaces_the_environment(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    db = await create_secret(tracking, auth, "db")
    api = await create_secret(tracking, auth, "api")
    component = (await orchestrator(tracking, auth, "o", secrets=["db"])).json()
    url = f"{COMPONENTS}/{component['id']}"
    body = {"add_secrets": ["api", db["id"]], "remove_secrets": ["db"], "environment": {"B": "2"}}
    updated = await tracking.put(url, json=body, headers=auth)
    assert updated.status_code == 200, updated.text
    metadata = updated.json()["metadata"]
    assert (metadata["secrets"], metadata["environment"]) == ([api["id"]], {"B": "2"})
    # Removing a secret that is not linked changes nothing.
    again = await tracking.put(url, json={"remove_secrets": ["db"]}, headers=auth)
    assert again.json()["metadata"]["secrets"] == [api["id"]]


async def test_a_deleted_secret_leaves_the_components_and_stacks_it_was_linked_to(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    db = await create_secret(tracking, auth, "db")
    component = (await orchestrator(tracking, auth, "o", secrets=["db"])).json()
    stack = await create_stack(tracking, auth, "s", component["id"], secrets=["db"])
    assert (await tracking.delete(f"{SECRETS}/{db['id']}", headers=auth)).status_code == 200
    assert await linked(tracking, auth, f"{COMPONENTS}/{component['id']}") == []
    assert await linked(tracking, auth, f"{STACKS}/{stack['id']}") == []


async def test_unknown_secret_is_404_on_create_and_update(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    refused = await orchestrator(tracking, auth, "o", secrets=[str(uuid.uuid4())])
    assert refused.status_code == 404
    assert HIDDEN in refused.json()["detail"][1]
    component = (await orchestrator(tracking, auth, "o")).json()
    url = f"{COMPONENTS}/{component['id']}"
    for body in ({"add_secrets": ["nope"]}, {"remove_secrets": ["nope"]}):
        response = await tracking.put(url, json=body, headers=auth)
        assert response.status_code == 404, response.text
        assert response.json()["detail"] == ["KeyError", f"Secret with name or ID nope {HIDDEN}."]


async def test_another_users_private_secret_cannot_be_linked_and_is_never_shown(
    tracking: httpx.AsyncClient, auth: Headers, ann: User
) -> None:
    anns = await create_secret(tracking, ann[1], "anns", private=True)
    public = await create_secret(tracking, auth, "shared")
    for ref in ("anns", anns["id"]):
        refused = await orchestrator(tracking, auth, "o", secrets=[ref])
        assert refused.status_code == 404, refused.text
        assert refused.json()["detail"][1] == f"Secret with name or ID {ref} {HIDDEN}."
    # Ann links her private secret and the public one to her component and her stack ...
    component = (await orchestrator(tracking, ann[1], "o", secrets=["anns", "shared"])).json()
    stack = await create_stack(tracking, ann[1], "s", component["id"], secrets=["anns"])
    both = [anns["id"], public["id"]]
    assert component["metadata"]["secrets"] == both
    # ... which everyone else sees without it, on a get, a hydrated list and an update.
    url = f"{COMPONENTS}/{component['id']}"
    assert await linked(tracking, auth, url) == [public["id"]]
    assert await linked(tracking, auth, f"{STACKS}/{stack['id']}") == []
    page = await tracking.get(COMPONENTS, params={"hydrate": "true"}, headers=auth)
    items = {item["name"]: item["metadata"]["secrets"] for item in page.json()["items"]}
    assert items["o"] == [public["id"]]
    stacks = await tracking.get(STACKS, params={"hydrate": "true", "name": "s"}, headers=auth)
    assert stacks.json()["items"][0]["metadata"]["secrets"] == []
    removed = await tracking.put(url, json={"remove_secrets": [anns["id"]]}, headers=auth)
    assert removed.status_code == 404
    renamed = await tracking.put(url, json={"name": "o2", "environment": {}}, headers=auth)
    assert renamed.json()["metadata"]["secrets"] == [public["id"]]
    # Another user's update kept Ann's link.
    assert await linked(tracking, ann[1], url) == both


async def test_stack_links_secrets_and_updates_them(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    db = await create_secret(tracking, auth, "db")
    api = await create_secret(tracking, auth, "api")
    component = (await orchestrator(tracking, auth, "o")).json()
    stack = await create_stack(tracking, auth, "s", component["id"], secrets=["db"])
    assert stack["metadata"]["secrets"] == [db["id"]]
    url = f"{STACKS}/{stack['id']}"
    body = {"add_secrets": ["api"], "remove_secrets": [db["id"]], "environment": {"C": "3"}}
    updated = await tracking.put(url, json=body, headers=auth)
    assert updated.status_code == 200, updated.text
    metadata = updated.json()["metadata"]
    assert (metadata["secrets"], metadata["environment"]) == ([api["id"]], {"C": "3"})
    refused = await tracking.put(url, json={"add_secrets": ["nope"]}, headers=auth)
    assert refused.status_code == 404


async def test_secret_references_are_stored_and_answered_as_given(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    configuration = {"path": "s3://bucket", "key": "{{creds.key}}", "secret": "plain"}
    body = {"name": "s3", "type": "artifact_store", "flavor": "s3"}
    response = await tracking.post(
        COMPONENTS, json={**body, "configuration": configuration}, headers=auth
    )
    assert response.status_code == 200, response.text
    answered = response.json()["metadata"]["configuration"]
    assert answered == {"path": "s3://bucket", "key": "{{creds.key}}", "secret": "**********"}


@pytest.mark.parametrize("field", ["path", "client_kwargs"])
async def test_a_reference_in_a_validated_field_is_400(
    tracking: httpx.AsyncClient, auth: Headers, field: str
) -> None:
    configuration = {"path": "s3://bucket", field: "{{creds.value}}"}
    body = {"name": "s3", "type": "artifact_store", "flavor": "s3"}
    response = await tracking.post(
        COMPONENTS, json={**body, "configuration": configuration}, headers=auth
    )
    assert response.status_code == 400, response.text
    assert response.json()["detail"] == [
        "ValueError",
        f"Passing the attribute `{field}` as a secret reference is not allowed as additional "
        "validation is required for this attribute.",
    ]


async def create_stack(
    tracking: httpx.AsyncClient, auth: Headers, name: str, orchestrator_id: str, **extra: Any
) -> Json:
    store = await tracking.get(
        COMPONENTS, params={"type": "artifact_store", "name": "default"}, headers=auth
    )
    components = {
        "orchestrator": [orchestrator_id],
        "artifact_store": [store.json()["items"][0]["id"]],
    }
    body = {"name": name, "components": components, **extra}
    response = await tracking.post(STACKS, json=body, headers=auth)
    assert response.status_code == 200, response.text
    created: Json = response.json()
    return created


async def test_a_component_named_as_a_reference_is_422(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await orchestrator(tracking, auth, "{{creds.name}}")
    assert response.status_code == 422, response.text
    assert "as a secret reference is not allowed" in response.text
