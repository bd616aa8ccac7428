"""What only artifacts do: names checked as the reference, tags, ``has_custom_name`` and
the ``latest_version`` fields. What they share with code repositories is in
``test_scoped.py``."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import func
from sqlmodel import col, select

from shared.db import session_scope
from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import ARTIFACT, Headers
from tracking.models import TagResource
from tracking.tag.service import tag_color

Json = dict[str, Any]
create = ARTIFACT.create
MISSING = object()


async def update(
    tracking: httpx.AsyncClient, auth: Headers, artifact: Json, **body: Any
) -> httpx.Response:
    return await tracking.put(ARTIFACT.one(artifact["id"]), json=body, headers=auth)


async def tag_names(tracking: httpx.AsyncClient, auth: Headers, artifact: Json) -> list[str]:
    response = await tracking.get(ARTIFACT.one(artifact["id"]), headers=auth)
    return [tag["name"] for tag in response.json()["resources"]["tags"]]


# --- create -------------------------------------------------------------------------------


async def test_new_artifact_has_no_tags_and_no_latest_version(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    artifact = await create(tracking, auth, default_project, "model")
    assert list(artifact["body"]) == ["created", "updated", "user_id", "project_id"]
    assert artifact["metadata"] == {"has_custom_name": False}
    resources = artifact["resources"]
    assert list(resources) == ["user", "tags", "latest_version_name", "latest_version_id"]
    assert resources["tags"] == []
    assert (resources["latest_version_name"], resources["latest_version_id"]) == (None, None)


async def test_create_returns_tags_sorted_by_name_body_only(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    artifact = await create(tracking, auth, default_project, "model", tags=["b", "a", "b", ""])
    tags = artifact["resources"]["tags"]
    assert [t["name"] for t in tags] == ["a", "b"]
    assert (tags[0]["metadata"], tags[0]["resources"]) == (None, None)
    assert list(tags[0]["body"]) == ["created", "updated", "user_id", "color", "exclusive"]


async def test_tag_colours_follow_from_the_tag_name(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    made = [
        await create(tracking, auth, default_project, name, tags=["prod", "dev"])
        for name in ("one", "two")
    ]
    colours = [{t["name"]: t["body"]["color"] for t in a["resources"]["tags"]} for a in made]
    assert colours[0] == colours[1] == {"dev": tag_color("dev"), "prod": tag_color("prod")}


async def test_has_custom_name_is_stored(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    artifact = await create(tracking, auth, default_project, "model", has_custom_name=True)
    assert artifact["metadata"] == {"has_custom_name": True}


async def test_empty_name_is_400_value_error(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    body = ARTIFACT.body(default_project, "")
    response = await tracking.post(ARTIFACT.path, json=body, headers=auth)
    assert response.status_code == 400
    assert response.json()["detail"] == [
        "ValueError",
        "The class `ArtifactRequest` has no attribute `name` or it is set to `None`. "
        "Cannot validate the name.",
    ]


@pytest.mark.parametrize("character", ["\t", "\n", "\r", "\v", "\f"])
async def test_name_with_a_forbidden_character_is_400_value_error(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, character: str
) -> None:
    name = f"a{character}b"
    body = ARTIFACT.body(default_project, name)
    response = await tracking.post(ARTIFACT.path, json=body, headers=auth)
    assert response.status_code == 400
    assert response.json()["detail"] == [
        "ValueError",
        f"The name `{name}` of the `Artifact` contains the following forbidden characters: "
        f"`{character}`.",
    ]


@pytest.mark.parametrize(
    ("change", "location"),
    [
        ({"project": MISSING}, ["body", "project"]),
        ({"project": "nope"}, ["body", "project"]),
        ({"name": MISSING}, ["body", "name"]),
        ({"name": "x" * 256}, ["body", "name"]),
        ({"tags": ["x" * 256]}, ["body", "tags", 0]),
        ({"has_custom_name": "maybe"}, ["body", "has_custom_name"]),
    ],
)
async def test_invalid_create_body_is_422_naming_the_field(
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    change: Json,
    location: list[Any],
) -> None:
    body = {**ARTIFACT.body(default_project, "model"), **change}
    sent = {key: value for key, value in body.items() if value is not MISSING}
    response = await tracking.post(ARTIFACT.path, json=sent, headers=auth)
    assert response.status_code == 422
    assert location in [error["loc"] for error in response.json()["detail"]]


# --- update -------------------------------------------------------------------------------


async def test_rename_sets_has_custom_name(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    artifact = await create(tracking, auth, default_project, "model")
    renamed = (await update(tracking, auth, artifact, name="renamed")).json()
    assert (renamed["name"], renamed["metadata"]) == ("renamed", {"has_custom_name": True})


async def test_has_custom_name_in_the_update_wins_over_the_rename(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    artifact = await create(tracking, auth, default_project, "model", has_custom_name=True)
    response = await update(tracking, auth, artifact, name="renamed", has_custom_name=False)
    assert response.json()["metadata"] == {"has_custom_name": False}


async def test_empty_name_in_the_update_changes_nothing(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    artifact = await create(tracking, auth, default_project, "model")
    unchanged = (await update(tracking, auth, artifact, name="")).json()
    assert (unchanged["name"], unchanged["metadata"]) == ("model", {"has_custom_name": False})


async def test_rename_to_a_forbidden_character_is_400(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    artifact = await create(tracking, auth, default_project, "model")
    response = await update(tracking, auth, artifact, name="a\tb")
    assert response.status_code == 400
    assert response.json()["detail"] == [
        "ValueError",
        "The name `a\tb` of the `ArtifactUpdate` contains the following forbidden "
        "characters: `\t`.",
    ]


async def test_update_adds_and_removes_tags(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    artifact = await create(tracking, auth, default_project, "model", tags=["a", "b"])
    response = await update(tracking, auth, artifact, add_tags=["d", "c"], remove_tags=["a", "z"])
    assert [t["name"] for t in response.json()["resources"]["tags"]] == ["b", "c", "d"]
    assert await tag_names(tracking, auth, artifact) == ["b", "c", "d"]


async def test_a_tag_both_added_and_removed_ends_up_removed(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    artifact = await create(tracking, auth, default_project, "model")
    await update(tracking, auth, artifact, add_tags=["x", "y"], remove_tags=["x"])
    assert await tag_names(tracking, auth, artifact) == ["y"]


async def test_tags_of_one_artifact_stay_off_another(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    first = await create(tracking, auth, default_project, "one", tags=["a"])
    second = await create(tracking, auth, default_project, "two", tags=["a"])
    await update(tracking, auth, first, remove_tags=["a"])
    assert await tag_names(tracking, auth, second) == ["a"]


# --- delete -------------------------------------------------------------------------------


async def test_delete_removes_the_tag_links(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> None:
    artifact = await create(tracking, auth, default_project, "model", tags=["a", "b"])
    await tracking.delete(ARTIFACT.one(artifact["id"]), headers=auth)
    query = (
        select(func.count())
        .select_from(TagResource)
        .where(col(TagResource.resource_id) == uuid.UUID(artifact["id"]))
    )
    async with session_scope(tracking_app.state["sessionmaker"]) as session:
        assert (await session.exec(query)).one() == 0


# --- list ---------------------------------------------------------------------------------


@pytest.fixture
async def three(tracking: httpx.AsyncClient, auth: Headers, default_project: Json) -> list[Json]:
    """``ab`` (tags prod, gpu), ``a_b`` (custom name, tag dev) and ``xyz`` (untagged)."""
    return [
        await create(tracking, auth, default_project, "ab", tags=["prod", "gpu"]),
        await create(tracking, auth, default_project, "a_b", has_custom_name=True, tags=["dev"]),
        await create(tracking, auth, default_project, "xyz"),
    ]


@pytest.mark.usefixtures("three")
@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ([("has_custom_name", "true")], ["a_b"]),
        ([("has_custom_name", "false")], ["ab", "xyz"]),
        ([("has_custom_name", "notequals:true")], ["ab", "xyz"]),
        ([("name", "ab"), ("has_custom_name", "true"), ("logical_operator", "or")], ["ab", "a_b"]),
    ],
)
async def test_has_custom_name_filter(
    tracking: httpx.AsyncClient,
    auth: Headers,
    params: list[tuple[str, str]],
    expected: list[str],
) -> None:
    assert await ARTIFACT.names(tracking, auth, *params) == expected


async def test_has_custom_name_that_is_not_a_bool_is_422(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.get(ARTIFACT.path, params={"has_custom_name": "maybe"}, headers=auth)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "has_custom_name"]


@pytest.mark.usefixtures("three")
@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ([("tags", "prod")], ["ab"]),
        ([("tags", "contains:d")], ["ab", "a_b"]),
        ([("tags", 'oneof:["dev","gpu"]')], ["ab", "a_b"]),
        ([("tags", "prod"), ("tags", "gpu")], ["ab"]),
        ([("tags", "prod"), ("tags", "dev"), ("logical_operator", "or")], ["ab", "a_b"]),
        ([("tags", "isnull:")], ["xyz"]),
        ([("tags", "isnotnull:")], ["ab", "a_b"]),
    ],
)
async def test_tags_filter(
    tracking: httpx.AsyncClient,
    auth: Headers,
    params: list[tuple[str, str]],
    expected: list[str],
) -> None:
    assert await ARTIFACT.names(tracking, auth, *params) == expected


@pytest.mark.usefixtures("three")
@pytest.mark.parametrize(
    ("sort_by", "position"), [("has_custom_name", -1), ("desc:has_custom_name", 0)]
)
async def test_sort_by_has_custom_name(
    tracking: httpx.AsyncClient, auth: Headers, sort_by: str, position: int
) -> None:
    assert (await ARTIFACT.names(tracking, auth, ("sort_by", sort_by)))[position] == "a_b"


@pytest.mark.usefixtures("three")
async def test_sort_by_tags_uses_the_first_tag_name(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    # ab's first tag is "gpu", a_b's is "dev"; where untagged rows go differs by database.
    tagged = [n for n in await ARTIFACT.names(tracking, auth, ("sort_by", "tags")) if n != "xyz"]
    assert tagged == ["a_b", "ab"]


@pytest.mark.usefixtures("three")
@pytest.mark.parametrize(
    ("sort_by", "expected"),
    [("latest_version", ["ab", "a_b", "xyz"]), ("desc:latest_version", ["xyz", "a_b", "ab"])],
)
async def test_sort_by_latest_version_is_creation_order_until_versions_exist(
    tracking: httpx.AsyncClient, auth: Headers, sort_by: str, expected: list[str]
) -> None:
    assert await ARTIFACT.names(tracking, auth, ("sort_by", sort_by)) == expected


# --- values PostgreSQL refuses ------------------------------------------------------------


async def test_a_nul_in_a_name_is_422_and_nothing_is_stored(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    body = ARTIFACT.body(default_project, "a\x00b")
    response = await tracking.post(ARTIFACT.path, json=body, headers=auth)
    assert response.status_code == 422
    assert response.json()["detail"] == [
        "ValueError",
        "Text may not contain the NUL character (\\u0000).",
    ]
    listed = await tracking.get(ARTIFACT.path, headers=auth)
    assert listed.json()["total"] == 0


async def test_a_nul_in_a_list_filter_is_422(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.get(f"{ARTIFACT.path}?name=contains:a%00b", headers=auth)
    assert response.status_code == 422
    assert response.json()["detail"][0] == "ValueError"
