"""What every named, project-scoped resource does the same way (``tracking.core``'s
``ScopedService`` and ``ScopedRepository``), checked on artifacts and code repositories
alike."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import (
    ARTIFACT,
    CODE_REPOSITORY,
    Headers,
    Resource,
    new_project,
    new_user,
    statements,
)
from tracking.artifact.schemas import ArtifactResponse
from tracking.code_repository.schemas import CodeRepositoryResponse

Json = dict[str, Any]
User = tuple[str, Headers]


@pytest.fixture(params=[ARTIFACT, CODE_REPOSITORY], ids=lambda r: r.id_param)
def resource(request: pytest.FixtureRequest) -> Resource:
    chosen: Resource = request.param
    return chosen


@pytest.fixture
async def ann(identity_app: LifespanApp, auth: Headers) -> User:
    return await new_user(identity_app, auth, "ann")


@pytest.fixture
async def other(tracking: httpx.AsyncClient, auth: Headers) -> Json:
    return await new_project(tracking, auth, "other")


def name_taken(resource: Resource, operation: str, name: str) -> list[str]:
    """The reference's 409 detail for a name already used in the default project."""
    return [
        "EntityExistsError",
        f"Unable to {operation} the requested {resource.label} with name '{name}': Found "
        f"another existing {resource.label} with the same name in the 'default' project.",
    ]


# --- create -------------------------------------------------------------------------------


async def test_create_answers_the_hydrated_envelope_in_reference_order(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    item = await resource.create(tracking, auth, default_project, "one")
    assert list(item) == ["body", "metadata", "resources", "id", "permission_denied", "name"]
    assert list(item["body"])[:4] == ["created", "updated", "user_id", "project_id"]
    assert item["body"]["project_id"] == default_project["id"]
    assert item["metadata"] is not None
    assert (item["name"], item["permission_denied"]) == ("one", False)


async def test_create_sends_naive_utc_datetimes(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    body = (await resource.create(tracking, auth, default_project, "one"))["body"]
    created = dt.datetime.fromisoformat(body["created"])
    assert created.tzinfo is None
    assert abs(created - dt.datetime.now(dt.UTC).replace(tzinfo=None)) < dt.timedelta(minutes=1)


async def test_create_nests_the_caller_body_only_ignoring_user_in_the_body(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    item = await resource.create(tracking, auth, default_project, "one", user=str(uuid.uuid4()))
    user = item["resources"]["user"]
    assert (user["name"], user["metadata"], user["resources"]) == ("default", None, None)
    assert item["body"]["user_id"] == user["id"]


async def test_duplicate_name_in_project_is_409_with_reference_message(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    await resource.create(tracking, auth, default_project, "one")
    body = resource.body(default_project, "one")
    response = await tracking.post(resource.path, json=body, headers=auth)
    assert (response.status_code, response.json()["detail"]) == (
        409,
        name_taken(resource, "create", "one"),
    )


async def test_same_name_in_another_project_is_allowed(
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    other: Json,
    resource: Resource,
) -> None:
    await resource.create(tracking, auth, default_project, "one")
    item = await resource.create(tracking, auth, other, "one")
    assert item["body"]["project_id"] == other["id"]


async def test_concurrent_duplicates_give_one_item_and_409s(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    body = resource.body(default_project, "race")
    responses = await asyncio.gather(
        *(tracking.post(resource.path, json=body, headers=auth) for _ in range(6))
    )
    assert sorted(r.status_code for r in responses) == [200] + [409] * 5


async def test_unknown_project_on_create_is_404_not_500(
    tracking: httpx.AsyncClient, auth: Headers, resource: Resource
) -> None:
    missing = uuid.uuid4()
    body = resource.body({"id": str(missing)}, "one")
    response = await tracking.post(resource.path, json=body, headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"] == [
        "KeyError",
        f"Unable to get project with name or ID '{missing}': No project with this name or ID found",
    ]


# --- auth, get ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "one"),
    [("GET", False), ("POST", False), ("GET", True), ("PUT", True), ("DELETE", True)],
)
async def test_every_route_needs_a_token(
    tracking: httpx.AsyncClient, resource: Resource, method: str, one: bool
) -> None:
    path = resource.one(uuid.UUID(int=1)) if one else resource.path
    response = await tracking.request(method, path, json={})
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"


async def test_get_is_hydrated_by_default(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    created = await resource.create(tracking, auth, default_project, "one")
    response = await tracking.get(resource.one(created["id"]), headers=auth)
    assert (response.status_code, response.json()) == (200, created)


async def test_get_without_hydrate_has_null_metadata_and_full_resources(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    created = await resource.create(tracking, auth, default_project, "one")
    response = await tracking.get(
        resource.one(created["id"]), params={"hydrate": "false"}, headers=auth
    )
    assert response.json() == {**created, "metadata": None}


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
async def test_unknown_id_is_404_with_reference_message(
    tracking: httpx.AsyncClient, auth: Headers, resource: Resource, method: str
) -> None:
    missing = uuid.uuid4()
    response = await tracking.request(method, resource.one(missing), json={}, headers=auth)
    assert response.status_code == 404
    label = resource.label
    assert response.json()["detail"] == [
        "KeyError",
        f"Unable to get {label} with ID '{missing}': No {label} with this ID found",
    ]


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
async def test_malformed_id_is_422(
    tracking: httpx.AsyncClient, auth: Headers, resource: Resource, method: str
) -> None:
    response = await tracking.request(method, resource.one("not-a-uuid"), json={}, headers=auth)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"][:2] == ["path", resource.id_param]


# --- update, delete -----------------------------------------------------------------------


async def test_rename_onto_an_existing_name_is_409(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    await resource.create(tracking, auth, default_project, "taken")
    item = await resource.create(tracking, auth, default_project, "one")
    response = await tracking.put(resource.one(item["id"]), json={"name": "taken"}, headers=auth)
    assert (response.status_code, response.json()["detail"]) == (
        409,
        name_taken(resource, "update", "taken"),
    )


async def test_concurrent_renames_onto_one_name_give_one_200_and_a_409(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    items = [await resource.create(tracking, auth, default_project, n) for n in ("a", "b")]
    responses = await asyncio.gather(
        *(tracking.put(resource.one(i["id"]), json={"name": "c"}, headers=auth) for i in items)
    )
    assert sorted(r.status_code for r in responses) == [200, 409]


async def test_rename_to_its_own_name_is_allowed(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    item = await resource.create(tracking, auth, default_project, "one")
    response = await tracking.put(resource.one(item["id"]), json={"name": "one"}, headers=auth)
    assert (response.status_code, response.json()["name"]) == (200, "one")


async def test_update_answers_hydrated_and_moves_updated_forward(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    item = await resource.create(tracking, auth, default_project, "one")
    changed = (await tracking.put(resource.one(item["id"]), json={}, headers=auth)).json()
    assert changed["body"]["updated"] > item["body"]["updated"]
    assert changed["body"]["created"] == item["body"]["created"]
    assert changed["metadata"] == item["metadata"]


async def test_delete_answers_null_and_the_item_is_gone(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    item = await resource.create(tracking, auth, default_project, "one")
    response = await tracking.delete(resource.one(item["id"]), headers=auth)
    assert (response.status_code, response.json()) == (200, None)
    assert (await tracking.get(resource.one(item["id"]), headers=auth)).status_code == 404


# --- list: envelope, paging, project ------------------------------------------------------


async def test_list_is_unhydrated_by_default_with_resources(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    created = await resource.create(tracking, auth, default_project, "one")
    page = (await tracking.get(resource.path, headers=auth)).json()
    assert page == {
        "index": 1,
        "max_size": 20,
        "total_pages": 1,
        "total": 1,
        "items": [{**created, "metadata": None}],
    }


async def test_list_with_hydrate_has_metadata(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    created = await resource.create(tracking, auth, default_project, "one")
    page = (await tracking.get(resource.path, params={"hydrate": "true"}, headers=auth)).json()
    assert page["items"] == [created]


async def test_empty_list_has_one_page(
    tracking: httpx.AsyncClient, auth: Headers, resource: Resource
) -> None:
    page = (await tracking.get(resource.path, headers=auth)).json()
    assert (page["total"], page["total_pages"], page["items"]) == (0, 1, [])


async def test_list_pages(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    for name in "abcde":
        await resource.create(tracking, auth, default_project, name)
    params = {"size": 2, "page": 3}
    page = (await tracking.get(resource.path, params=params, headers=auth)).json()
    assert (page["index"], page["max_size"], page["total"], page["total_pages"]) == (3, 2, 5, 3)
    assert [item["name"] for item in page["items"]] == ["e"]


async def test_page_past_the_end_is_an_empty_page(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    await resource.create(tracking, auth, default_project, "one")
    response = await tracking.get(resource.path, params={"page": 3, "size": 1}, headers=auth)
    assert response.status_code == 200
    page = response.json()
    assert (page["index"], page["max_size"], page["total"], page["total_pages"]) == (3, 1, 1, 1)
    assert page["items"] == []


@pytest.mark.parametrize(
    ("param", "value"),
    [("size", "0"), ("size", "10001"), ("page", "0"), ("logical_operator", "xor")],
)
async def test_paging_parameters_out_of_bounds_are_422(
    tracking: httpx.AsyncClient, auth: Headers, resource: Resource, param: str, value: str
) -> None:
    response = await tracking.get(resource.path, params={param: value}, headers=auth)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", param]


@pytest.fixture
async def here_and_there(
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    other: Json,
    resource: Resource,
) -> None:
    """``here`` in the default project, ``there`` in ``other``."""
    await resource.create(tracking, auth, default_project, "here")
    await resource.create(tracking, auth, other, "there")


@pytest.mark.usefixtures("here_and_there")
async def test_list_without_project_is_the_default_project(
    tracking: httpx.AsyncClient, auth: Headers, resource: Resource
) -> None:
    assert await resource.names(tracking, auth) == ["here"]


@pytest.mark.usefixtures("here_and_there")
@pytest.mark.parametrize("key", ["name", "id"])
async def test_list_project_takes_a_name_or_an_id(
    tracking: httpx.AsyncClient, auth: Headers, other: Json, resource: Resource, key: str
) -> None:
    assert await resource.names(tracking, auth, ("project", other[key])) == ["there"]


@pytest.mark.usefixtures("here_and_there")
async def test_project_scope_holds_under_logical_or(
    tracking: httpx.AsyncClient, auth: Headers, resource: Resource
) -> None:
    params = [("name", "here"), ("name", "there"), ("logical_operator", "or")]
    assert await resource.names(tracking, auth, *params) == ["here"]


async def test_list_unknown_project_is_404(
    tracking: httpx.AsyncClient, auth: Headers, resource: Resource
) -> None:
    response = await tracking.get(resource.path, params={"project": "nowhere"}, headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"] == [
        "KeyError",
        "Unable to get project with name or ID 'nowhere': No project with this name or ID found",
    ]


# --- list: filters and sorting ------------------------------------------------------------


@pytest.fixture
async def three(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> list[Json]:
    """``ab``, ``a_b`` and ``xyz``, created in this order."""
    return [await resource.create(tracking, auth, default_project, n) for n in ("ab", "a_b", "xyz")]


@pytest.mark.usefixtures("three")
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("ab", ["ab"]),
        ("equals:ab", ["ab"]),
        ("notequals:ab", ["a_b", "xyz"]),
        ("contains:a_", ["a_b"]),
        ("contains:A", ["ab", "a_b"]),
        ("contains:%", []),
        ("startswith:a", ["ab", "a_b"]),
        ("startswith:a_", ["a_b"]),
        ("endswith:_b", ["a_b"]),
        ("notcontains:b", ["xyz"]),
        ('oneof:["xyz","ab"]', ["ab", "xyz"]),
        ('notoneof:["xyz","ab"]', ["a_b"]),
        ("weird:value", []),
    ],
)
async def test_name_filter_escapes_like_wildcards(
    tracking: httpx.AsyncClient, auth: Headers, resource: Resource, value: str, expected: list[str]
) -> None:
    assert await resource.names(tracking, auth, ("name", value)) == expected


@pytest.mark.usefixtures("three")
@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ([("name", "contains:a"), ("name", "endswith:_b")], ["a_b"]),
        ([("name", "ab"), ("name", "xyz")], []),
        ([("name", "ab"), ("name", "xyz"), ("logical_operator", "or")], ["ab", "xyz"]),
    ],
)
async def test_repeated_filters_are_joined_with_the_logical_operator(
    tracking: httpx.AsyncClient,
    auth: Headers,
    resource: Resource,
    params: list[tuple[str, str]],
    expected: list[str],
) -> None:
    assert await resource.names(tracking, auth, *params) == expected


async def test_id_filter(
    tracking: httpx.AsyncClient, auth: Headers, three: list[Json], resource: Resource
) -> None:
    target = three[1]["id"]
    prefix = target.replace("-", "")[:12]
    assert await resource.names(tracking, auth, ("id", target)) == ["a_b"]
    assert await resource.names(tracking, auth, ("id", f"startswith:{prefix}")) == ["a_b"]
    assert await resource.names(tracking, auth, ("id", "not-a-uuid")) == []


@pytest.mark.usefixtures("three")
@pytest.mark.parametrize("param", ["created", "updated"])
@pytest.mark.parametrize(
    ("value", "count"),
    [
        ("gt:2000-01-01 00:00:00", 3),
        ("lt:2000-01-01 00:00:00", 0),
        ("in:2000-01-01 00:00:00,2999-01-01 00:00:00", 3),
        ("isnull:", 0),
    ],
)
async def test_datetime_filters(
    tracking: httpx.AsyncClient,
    auth: Headers,
    resource: Resource,
    param: str,
    value: str,
    count: int,
) -> None:
    assert len(await resource.names(tracking, auth, (param, value))) == count


async def test_datetime_filter_in_another_format_is_422(
    tracking: httpx.AsyncClient, auth: Headers, resource: Resource
) -> None:
    # Neither the reference's '%Y-%m-%d %H:%M:%S' nor ISO 8601.
    params = {"created": "gt:01/02/2000 00:00"}
    response = await tracking.get(resource.path, params=params, headers=auth)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "created"]


@pytest.fixture
async def by_two_users(
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    ann: User,
    resource: Resource,
) -> list[Json]:
    """``admin-1`` and ``admin-2`` by the admin, ``ann-1`` by ann, in between."""
    return [
        await resource.create(tracking, auth, default_project, "admin-1"),
        await resource.create(tracking, ann[1], default_project, "ann-1"),
        await resource.create(tracking, auth, default_project, "admin-2"),
    ]


@pytest.mark.usefixtures("by_two_users")
async def test_user_filter_matches_the_creator_id(
    tracking: httpx.AsyncClient, auth: Headers, ann: User, resource: Resource
) -> None:
    assert await resource.names(tracking, auth, ("user", ann[0])) == ["ann-1"]


@pytest.mark.usefixtures("by_two_users")
async def test_user_filter_matches_the_creator_name_held_by_identity(
    tracking: httpx.AsyncClient, auth: Headers, resource: Resource
) -> None:
    assert await resource.names(tracking, auth, ("user", "ann")) == ["ann-1"]
    assert await resource.names(tracking, auth, ("user", "startswith:def")) == [
        "admin-1",
        "admin-2",
    ]


@pytest.mark.usefixtures("by_two_users")
async def test_negated_user_filter_applies_to_id_or_name_as_the_reference(
    tracking: httpx.AsyncClient, auth: Headers, resource: Resource
) -> None:
    # The reference joins the id and the name conditions with OR, so "not named ann"
    # still keeps ann's rows (her id is not "ann").
    names = await resource.names(tracking, auth, ("user", "notequals:ann"))
    assert sorted(names) == ["admin-1", "admin-2", "ann-1"]


@pytest.mark.usefixtures("by_two_users")
async def test_unknown_user_name_matches_nothing(
    tracking: httpx.AsyncClient, auth: Headers, resource: Resource
) -> None:
    assert await resource.names(tracking, auth, ("user", "nobody")) == []


@pytest.mark.usefixtures("by_two_users")
async def test_scope_user_is_anded_even_under_or(
    tracking: httpx.AsyncClient, auth: Headers, ann: User, resource: Resource
) -> None:
    params = [("scope_user", ann[0]), ("name", "admin-1"), ("name", "ann-1")]
    assert await resource.names(tracking, auth, *params, ("logical_operator", "or")) == ["ann-1"]


async def test_scope_user_that_is_not_a_uuid_is_422(
    tracking: httpx.AsyncClient, auth: Headers, resource: Resource
) -> None:
    response = await tracking.get(resource.path, params={"scope_user": "ann"}, headers=auth)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "scope_user"]


@pytest.mark.usefixtures("three")
@pytest.mark.parametrize(
    ("sort_by", "expected"),
    [
        (None, ["ab", "a_b", "xyz"]),
        ("name", ["a_b", "ab", "xyz"]),
        ("asc:name", ["a_b", "ab", "xyz"]),
        ("desc:name", ["xyz", "ab", "a_b"]),
        ("bad:name", ["a_b", "ab", "xyz"]),
        ("desc:created", ["xyz", "a_b", "ab"]),
    ],
)
async def test_sort_keys(
    tracking: httpx.AsyncClient,
    auth: Headers,
    resource: Resource,
    sort_by: str | None,
    expected: list[str],
) -> None:
    params = [("sort_by", sort_by)] if sort_by else []
    assert await resource.names(tracking, auth, *params) == expected


async def test_sort_by_updated_follows_the_last_change(
    tracking: httpx.AsyncClient, auth: Headers, three: list[Json], resource: Resource
) -> None:
    await tracking.put(resource.one(three[0]["id"]), json={}, headers=auth)
    assert (await resource.names(tracking, auth, ("sort_by", "desc:updated")))[0] == "ab"


async def test_sort_by_id(
    tracking: httpx.AsyncClient, auth: Headers, three: list[Json], resource: Resource
) -> None:
    by_id = [item["name"] for item in sorted(three, key=lambda item: uuid.UUID(item["id"]))]
    assert await resource.names(tracking, auth, ("sort_by", "id")) == by_id


async def test_sort_by_user_orders_by_creator_id(
    tracking: httpx.AsyncClient, auth: Headers, by_two_users: list[Json], resource: Resource
) -> None:
    expected = sorted(
        by_two_users, key=lambda item: (uuid.UUID(item["body"]["user_id"]), uuid.UUID(item["id"]))
    )
    got = await resource.names(tracking, auth, ("sort_by", "user"))
    assert got == [item["name"] for item in expected]


@pytest.mark.parametrize(
    ("sort_by", "message"), [("version", "valid fields"), ("desc:page", "can not be sorted")]
)
async def test_invalid_sort_is_422(
    tracking: httpx.AsyncClient, auth: Headers, resource: Resource, sort_by: str, message: str
) -> None:
    response = await tracking.get(resource.path, params={"sort_by": sort_by}, headers=auth)
    assert response.status_code == 422
    assert message in response.json()["detail"][0]["msg"]


# --- cost ---------------------------------------------------------------------------------


async def test_listing_costs_the_same_few_queries_for_5_or_50_rows(
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    ann: User,
    tracking_app: LifespanApp,
    resource: Resource,
) -> None:
    tags = {"tags": ["shared"]} if resource is ARTIFACT else {}
    for i in range(50):
        creator = ann[1] if i % 2 else auth
        await resource.create(tracking, creator, default_project, f"n{i}", **tags)
    selects = []
    for size in (5, 50):
        with statements(tracking_app.state["engine"]) as seen:
            response = await tracking.get(resource.path, params={"size": size}, headers=auth)
        items = response.json()["items"]
        assert len(items) == size
        assert {item["resources"]["user"]["name"] for item in items} == {"default", "ann"}
        selects.append([s for s in seen if s.lstrip().upper().startswith("SELECT")])
    # The project, the count, the page (and, for artifacts, every tag of the page).
    assert len(selects[0]) == len(selects[1]) == resource.list_selects


# --- the wire dicts are the models' ---------------------------------------------------------

RESPONSE_MODELS: dict[str, type[BaseModel]] = {
    "artifact_id": ArtifactResponse,
    "code_repository_id": CodeRepositoryResponse,
}


async def test_every_answer_is_exactly_what_its_response_model_sends(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, resource: Resource
) -> None:
    """Reads are rendered from rows without validation (shared.shapes): each item must
    validate as the declared model and serialize to the same JSON."""
    model = RESPONSE_MODELS[resource.id_param]
    # Tags where the resource has them (code repositories ignore the key).
    created = await resource.create(tracking, auth, default_project, "one", tags=["b", "a"])
    answers = [created, (await tracking.get(resource.one(created["id"]), headers=auth)).json()]
    for hydrate in ("false", "true"):
        page = await tracking.get(resource.path, params={"hydrate": hydrate}, headers=auth)
        answers.extend(page.json()["items"])
    for answer in answers:
        assert model.model_validate(answer).model_dump(mode="json") == answer
