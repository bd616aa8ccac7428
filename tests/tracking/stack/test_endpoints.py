"""``/api/v1/stacks`` against the reference's wire format."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers, names, new_user
from tests.tracking.component.support import create_component
from tests.tracking.service_connector.support import create as create_connector

STACKS = "/api/v1/stacks"
ENVELOPE = ["body", "metadata", "resources", "id", "permission_denied", "name"]
Json = dict[str, Any]


async def post(
    tracking: httpx.AsyncClient, auth: Headers, name: str, components: Json, **extra: Any
) -> httpx.Response:
    body = {"name": name, "components": components, **extra}
    return await tracking.post(STACKS, json=body, headers=auth)


async def listed(tracking: httpx.AsyncClient, auth: Headers, *params: tuple[str, str]) -> list[str]:
    return names(await tracking.get(STACKS, params=list(params), headers=auth))


@pytest.fixture
async def parts(tracking: httpx.AsyncClient, auth: Headers) -> dict[str, str]:
    """Component ids: artifact stores ``store`` and ``spare``, orchestrators ``runner`` and
    ``other``, experiment trackers ``t1`` and ``t2``."""
    ids = {}
    for name, component_type in [
        ("store", "artifact_store"),
        ("spare", "artifact_store"),
        ("runner", "orchestrator"),
        ("other", "orchestrator"),
    ]:
        ids[name] = (await create_component(tracking, auth, name, component_type))["id"]
    return ids


def composition(parts: dict[str, str], store: str = "store", runner: str = "runner") -> Json:
    return {"artifact_store": [parts[store]], "orchestrator": [parts[runner]]}


async def create(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str], name: str, **extra: Any
) -> Json:
    response = await post(tracking, auth, name, composition(parts), **extra)
    assert response.status_code == 200, response.text
    created: Json = response.json()
    return created


# --- the default stack and the client's connection sequence -------------------------------


async def test_default_stack_is_found_by_name(tracking: httpx.AsyncClient, auth: Headers) -> None:
    params = {
        "hydrate": "False",
        "sort_by": "created",
        "logical_operator": "and",
        "name": "default",
    }
    page = (await tracking.get(STACKS, params=params, headers=auth)).json()
    (stack,) = page["items"]
    assert list(stack) == ENVELOPE
    assert stack["name"] == "default"
    assert stack["metadata"] is None
    assert stack["resources"] == {"user": None}
    assert list(stack["body"]) == ["created", "updated", "user_id"]


async def test_default_stack_hydrated_holds_its_artifact_store(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    (listed_stack,) = (await tracking.get(STACKS, params={"name": "default"}, headers=auth)).json()[
        "items"
    ]
    response = await tracking.get(f"{STACKS}/{listed_stack['id']}?hydrate=True", headers=auth)
    stack = response.json()
    metadata = stack["metadata"]
    assert list(metadata) == [
        "components",
        "description",
        "stack_spec_path",
        "environment",
        "secrets",
        "labels",
    ]
    (store,) = metadata["components"]["artifact_store"]
    assert list(store) == ENVELOPE
    assert (store["name"], store["metadata"], store["resources"]) == ("default", None, None)
    assert store["body"]["flavor_name"] == "local"


async def test_default_stack_cannot_be_modified_or_deleted(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    (stack,) = (await tracking.get(STACKS, params={"name": "default"}, headers=auth)).json()[
        "items"
    ]
    changed = await tracking.put(
        f"{STACKS}/{stack['id']}", json={"description": "mine"}, headers=auth
    )
    deleted = await tracking.delete(f"{STACKS}/{stack['id']}", headers=auth)
    for response in (changed, deleted):
        assert response.status_code == 403
        assert response.json()["detail"][0] == "IllegalOperationError"


# --- create -------------------------------------------------------------------------------


async def test_create_returns_the_hydrated_stack(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str]
) -> None:
    stack = await create(
        tracking, auth, parts, "prod", description="Production", environment={"A": "1"}
    )
    assert list(stack) == ENVELOPE
    metadata = stack["metadata"]
    assert list(metadata["components"]) == ["artifact_store", "orchestrator"]
    assert [c["id"] for c in metadata["components"]["artifact_store"]] == [parts["store"]]
    assert [c["id"] for c in metadata["components"]["orchestrator"]] == [parts["runner"]]
    assert (metadata["description"], metadata["environment"]) == ("Production", {"A": "1"})
    assert (metadata["secrets"], metadata["labels"]) == ([], None)
    user = stack["resources"]["user"]
    assert (user["name"], user["metadata"]) == ("default", None)
    assert stack["body"]["user_id"] == user["id"]


async def test_get_is_hydrated_by_default_and_list_is_not(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str]
) -> None:
    stack = await create(tracking, auth, parts, "prod")
    assert (await tracking.get(f"{STACKS}/{stack['id']}", headers=auth)).json() == stack
    bare = (await tracking.get(f"{STACKS}/{stack['id']}?hydrate=false", headers=auth)).json()
    assert (bare["metadata"], bare["resources"]) == (None, stack["resources"])
    (item,) = (await tracking.get(STACKS, params={"name": "prod"}, headers=auth)).json()["items"]
    assert item == bare
    hydrated = await tracking.get(STACKS, params={"name": "prod", "hydrate": "true"}, headers=auth)
    assert hydrated.json()["items"] == [stack]


@pytest.mark.parametrize(
    "components",
    [
        {},
        {"artifact_store": ["store"]},
        {"orchestrator": ["runner"]},
        {"artifact_store": [], "orchestrator": ["runner"]},
        {"artifact_store": ["store", "spare"], "orchestrator": ["runner"]},
        {"artifact_store": ["store"], "orchestrator": ["runner", "other"]},
    ],
)
async def test_composition_rules_are_422(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str], components: Json
) -> None:
    ids = {t: [parts[n] for n in names_] for t, names_ in components.items()}
    response = await post(tracking, auth, "prod", ids)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"][:2] == ["body", "components"]


async def test_repeatable_types_pass_the_composition_rules(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str]
) -> None:
    # No experiment tracker flavor is registered: the ids are looked up (404), not refused.
    response = await post(
        tracking,
        auth,
        "prod",
        {**composition(parts), "experiment_tracker": [str(uuid.uuid4()), str(uuid.uuid4())]},
    )
    assert response.status_code == 404


async def test_unknown_component_is_404(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str]
) -> None:
    missing = str(uuid.uuid4())
    response = await post(
        tracking, auth, "prod", {"artifact_store": [missing], "orchestrator": [parts["runner"]]}
    )
    assert response.status_code == 404
    assert response.json()["detail"][0] == "KeyError"
    assert missing in response.json()["detail"][1]


async def test_component_listed_under_the_wrong_type_is_400(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str]
) -> None:
    response = await post(
        tracking,
        auth,
        "prod",
        {"artifact_store": [parts["runner"]], "orchestrator": [parts["other"]]},
    )
    assert response.status_code == 400
    assert response.json()["detail"][0] == "ValueError"


async def test_duplicate_name_is_409(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str]
) -> None:
    await create(tracking, auth, parts, "prod")
    response = await post(tracking, auth, "prod", composition(parts))
    assert response.status_code == 409
    assert response.json()["detail"][0] == "EntityExistsError"


async def test_secrets_new_and_unknown_connectors_are_refused(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str]
) -> None:
    secret = await post(tracking, auth, "prod", composition(parts), secrets=["db"])
    assert secret.status_code == 404
    connector = await post(
        tracking, auth, "prod", composition(parts), service_connectors=[str(uuid.uuid4())]
    )
    assert connector.status_code == 404
    inline = {"type": "aws", "auth_method": "secret-key"}
    new_connector = await post(
        tracking, auth, "prod", composition(parts), service_connectors=[inline]
    )
    assert new_connector.status_code == 400
    registered = await create_connector(tracking, auth)
    named = await post(
        tracking, auth, "prod", composition(parts), service_connectors=[registered["id"]]
    )
    assert named.status_code == 200, named.text


async def test_inline_component_creation_is_not_supported(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str]
) -> None:
    inline = {"artifact_store": [{"flavor": "local"}], "orchestrator": [parts["runner"]]}
    assert (await post(tracking, auth, "prod", inline)).status_code == 422


# --- update and delete --------------------------------------------------------------------


async def test_update_renames_and_recomposes(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str]
) -> None:
    stack = await create(tracking, auth, parts, "prod", description="old")
    response = await tracking.put(
        f"{STACKS}/{stack['id']}",
        json={"name": "live", "components": composition(parts, "spare", "other")},
        headers=auth,
    )
    assert response.status_code == 200, response.text
    updated = response.json()
    assert updated["name"] == "live"
    components = updated["metadata"]["components"]
    assert [c["name"] for c in components["artifact_store"]] == ["spare"]
    assert [c["name"] for c in components["orchestrator"]] == ["other"]
    assert updated["metadata"]["description"] == "old"


async def test_update_checks_the_composition(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str]
) -> None:
    stack = await create(tracking, auth, parts, "prod")
    url = f"{STACKS}/{stack['id']}"
    partial = await tracking.put(
        url, json={"components": {"orchestrator": [parts["other"]]}}, headers=auth
    )
    assert partial.status_code == 422
    wrong = await tracking.put(
        url,
        json={
            "components": {"artifact_store": [parts["other"]], "orchestrator": [parts["runner"]]}
        },
        headers=auth,
    )
    assert wrong.status_code == 400


async def test_rename_to_a_taken_name_is_409(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str]
) -> None:
    stack = await create(tracking, auth, parts, "prod")
    response = await tracking.put(f"{STACKS}/{stack['id']}", json={"name": "default"}, headers=auth)
    assert response.status_code == 409


async def test_delete_keeps_the_components(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str]
) -> None:
    stack = await create(tracking, auth, parts, "prod")
    response = await tracking.delete(f"{STACKS}/{stack['id']}", headers=auth)
    assert (response.status_code, response.json()) == (200, None)
    assert (await tracking.get(f"{STACKS}/{stack['id']}", headers=auth)).status_code == 404
    store = await tracking.get(f"/api/v1/components/{parts['store']}", headers=auth)
    assert store.status_code == 200
    freed = await tracking.delete(f"/api/v1/components/{parts['store']}", headers=auth)
    assert freed.status_code == 200


async def test_unknown_stack_is_404(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.get(f"{STACKS}/{uuid.uuid4()}", headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"][0] == "KeyError"


async def test_malformed_stack_id_is_422(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.get(f"{STACKS}/default", headers=auth)
    assert response.status_code == 422


# --- filters, sorting, paging -------------------------------------------------------------


@pytest.fixture
async def stacks(tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str]) -> None:
    """``default``; ``alpha`` (store, runner); ``beta`` (spare, other, described)."""
    await create(tracking, auth, parts, "alpha")
    await post(
        tracking, auth, "beta", composition(parts, "spare", "other"), description="Second one"
    )


@pytest.mark.parametrize(
    ("param", "value", "expected"),
    [
        ("name", "alpha", ["alpha"]),
        ("name", "endswith:a", ["alpha", "beta"]),
        ("description", "contains:second", ["beta"]),
        ("description", "", ["alpha", "default"]),
        ("created", "gte:2000-01-01 00:00:00", ["alpha", "beta", "default"]),
        ("updated", "lte:2000-01-01 00:00:00", []),
        ("user", "isnull:", ["default"]),
        ("component", "spare", ["beta"]),
        ("component", "startswith:r", ["alpha"]),
        ("component", "default", ["default"]),
    ],
)
async def test_filter(
    tracking: httpx.AsyncClient,
    auth: Headers,
    stacks: None,
    param: str,
    value: str,
    expected: list[str],
) -> None:
    assert sorted(await listed(tracking, auth, (param, value))) == expected


async def test_filter_by_component_id_and_component_uuid(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str], stacks: None
) -> None:
    assert await listed(tracking, auth, ("component_id", parts["other"])) == ["beta"]
    assert await listed(tracking, auth, ("component", parts["runner"])) == ["alpha"]


async def test_filter_by_id_and_user(
    tracking: httpx.AsyncClient, auth: Headers, parts: dict[str, str]
) -> None:
    stack = await create(tracking, auth, parts, "prod")
    assert await listed(tracking, auth, ("id", stack["id"])) == ["prod"]
    assert await listed(tracking, auth, ("user", stack["body"]["user_id"])) == ["prod"]
    # A user name is looked up in identity (the bootstrapped default stack has no creator).
    assert await listed(tracking, auth, ("user", "default")) == ["prod"]
    assert await listed(tracking, auth, ("user", "nobody")) == []


async def test_scope_user_is_anded_on_or_filters(
    tracking: httpx.AsyncClient,
    auth: Headers,
    identity_app: LifespanApp,
    parts: dict[str, str],
) -> None:
    await create(tracking, auth, parts, "prod")
    ann_id, ann = await new_user(identity_app, auth, "ann")
    await create(tracking, ann, parts, "anns")
    params = [("name", "anns"), ("name", "prod"), ("logical_operator", "or")]
    assert sorted(await listed(tracking, auth, *params)) == ["anns", "prod"]
    assert await listed(tracking, auth, *params, ("scope_user", ann_id)) == ["anns"]


@pytest.mark.parametrize(
    ("sort_by", "expected"),
    [
        ("created", ["default", "alpha", "beta"]),
        ("desc:created", ["beta", "alpha", "default"]),
        ("desc:updated", ["beta", "alpha", "default"]),
        ("name", ["alpha", "beta", "default"]),
    ],
)
async def test_sort(
    tracking: httpx.AsyncClient, auth: Headers, stacks: None, sort_by: str, expected: list[str]
) -> None:
    assert await listed(tracking, auth, ("sort_by", sort_by)) == expected


async def test_sort_by_description_then_id(
    tracking: httpx.AsyncClient, auth: Headers, stacks: None
) -> None:
    items = (await tracking.get(STACKS, params={"sort_by": "description"}, headers=auth)).json()
    listed_names = [s["name"] for s in items["items"]]
    assert listed_names[-1] == "beta"
    empty = [uuid.UUID(s["id"]) for s in items["items"][:2]]
    assert empty == sorted(empty)


async def test_sort_by_id_follows_the_ids(
    tracking: httpx.AsyncClient, auth: Headers, stacks: None
) -> None:
    items = (await tracking.get(STACKS, params={"sort_by": "id"}, headers=auth)).json()["items"]
    ids = [uuid.UUID(s["id"]) for s in items]
    assert ids == sorted(ids)


async def test_unknown_sort_key_is_422(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.get(STACKS, params={"sort_by": "components"}, headers=auth)
    assert response.status_code == 422


async def test_malformed_filter_is_422(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.get(STACKS, params={"updated": "gt:soon"}, headers=auth)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "updated"]


async def test_page_past_the_end_is_an_empty_page(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.get(STACKS, params={"page": "2"}, headers=auth)
    assert response.status_code == 200
    assert response.json()["items"] == []


# --- authentication -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", STACKS),
        ("POST", STACKS),
        ("GET", f"{STACKS}/{uuid.UUID(int=1)}"),
        ("PUT", f"{STACKS}/{uuid.UUID(int=1)}"),
        ("DELETE", f"{STACKS}/{uuid.UUID(int=1)}"),
    ],
)
async def test_requests_without_a_token_are_401(
    tracking: httpx.AsyncClient, method: str, path: str
) -> None:
    response = await tracking.request(method, path, json={})
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
