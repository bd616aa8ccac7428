"""``/api/v1/projects`` (and ``/workspaces``) against the reference's wire format."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from typing import Any

import httpx
import pytest
from sqlmodel import col, select, update

from shared.db import session_scope
from tests.support.asgi import LifespanApp, running
from tests.tracking.artifact.support import Headers, names
from tracking.app import create_app
from tracking.models import Artifact, Project, Stack
from tracking.settings import Settings

PROJECTS = "/api/v1/projects"
ENVELOPE = ["body", "metadata", "resources", "id", "permission_denied", "name"]
Json = dict[str, Any]


async def create(tracking: httpx.AsyncClient, auth: Headers, name: str, **extra: Any) -> Json:
    response = await tracking.post(PROJECTS, json={"name": name, **extra}, headers=auth)
    assert response.status_code == 200, response.text
    created: Json = response.json()
    return created


async def listed(tracking: httpx.AsyncClient, auth: Headers, *params: tuple[str, str]) -> list[str]:
    return names(await tracking.get(PROJECTS, params=list(params), headers=auth))


async def set_times(app: LifespanApp, name: str, created: str, updated: str) -> None:
    """Give a project known timestamps (filters compare to the second)."""
    values = {
        "created": dt.datetime.fromisoformat(created).replace(tzinfo=dt.UTC),
        "updated": dt.datetime.fromisoformat(updated).replace(tzinfo=dt.UTC),
    }
    async with session_scope(app.state["sessionmaker"]) as session:
        await session.exec(update(Project).where(col(Project.name) == name).values(**values))


@pytest.fixture
async def three(tracking: httpx.AsyncClient, auth: Headers, tracking_app: LifespanApp) -> None:
    """``alpha``, ``beta`` and ``gamma`` beside ``default``, with distinct timestamps."""
    for name, display, created, updated in [
        ("alpha", "Zeta", "2030-01-01 00:00:00", "2030-06-01 00:00:00"),
        ("beta", "Yota", "2030-02-01 00:00:00", "2030-04-01 00:00:00"),
        ("gamma", "Xi", "2030-03-01 00:00:00", "2030-05-01 00:00:00"),
    ]:
        await create(tracking, auth, name, display_name=display)
        await set_times(tracking_app, name, created, updated)


# --- the default project and the client's connection sequence -----------------------------


async def test_default_project_is_the_only_one_at_start(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.get(
        PROJECTS,
        params={"hydrate": "False", "sort_by": "created", "logical_operator": "and"},
        headers=auth,
    )
    page = response.json()
    assert (page["index"], page["max_size"], page["total"], page["total_pages"]) == (1, 20, 1, 1)
    (project,) = page["items"]
    assert list(project) == ENVELOPE
    assert project["name"] == "default"
    assert project["metadata"] is None
    assert project["resources"] == {}
    assert list(project["body"]) == ["created", "updated", "display_name"]


async def test_get_by_id_is_hydrated_by_default(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    response = await tracking.get(
        f"{PROJECTS}/{default_project['id']}", params={"hydrate": "True"}, headers=auth
    )
    assert response.status_code == 200
    project = response.json()
    assert list(project) == ENVELOPE
    assert project["metadata"] == {"description": "", "project_metadata": {}}
    assert project["resources"] == {}
    assert project == default_project


async def test_get_without_hydration_has_no_metadata(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.get(f"{PROJECTS}/default", params={"hydrate": "false"}, headers=auth)
    assert response.json()["metadata"] is None
    assert response.json()["resources"] == {}


async def test_datetimes_are_naive_iso_utc(
    tracking: httpx.AsyncClient, default_project: Json
) -> None:
    created = default_project["body"]["created"]
    assert "+" not in created
    assert not created.endswith("Z")
    assert dt.datetime.fromisoformat(created).tzinfo is None


async def test_unknown_project_is_404_key_error(tracking: httpx.AsyncClient, auth: Headers) -> None:
    for name_or_id in ("nope", str(uuid.uuid4())):
        response = await tracking.get(f"{PROJECTS}/{name_or_id}", headers=auth)
        assert response.status_code == 404
        assert response.json()["detail"][0] == "KeyError"
        assert name_or_id in response.json()["detail"][1]


async def test_defaults_are_created_once_across_restarts(
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    tracking_settings: Settings,
    identity_app: LifespanApp,
) -> None:
    stacks = (await tracking.get("/api/v1/stacks", headers=auth)).json()["items"]
    app = create_app(tracking_settings, http_transport=httpx.ASGITransport(app=identity_app))
    async with running(app) as again, session_scope(again.state["sessionmaker"]) as session:
        projects = (await session.exec(select(Project))).all()
        stack_rows = (await session.exec(select(Stack))).all()
    assert [str(p.id) for p in projects] == [default_project["id"]]
    assert [str(s.id) for s in stack_rows] == [s["id"] for s in stacks]


# --- create, update, delete ---------------------------------------------------------------


async def test_create_returns_the_hydrated_project(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    project = await create(
        tracking, auth, "research", description="R&D", project_metadata={"team": "ml"}
    )
    assert list(project) == ENVELOPE
    assert project["body"]["display_name"] == "research"
    assert project["metadata"] == {"description": "R&D", "project_metadata": {"team": "ml"}}
    assert project["resources"] == {}
    assert (await tracking.get(f"{PROJECTS}/research", headers=auth)).json() == project


async def test_create_derives_the_name_from_the_display_name(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.post(PROJECTS, json={"display_name": "My Project #1"}, headers=auth)
    assert response.status_code == 200, response.text
    assert (response.json()["name"], response.json()["body"]["display_name"]) == (
        "my-project-1",
        "My Project #1",
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "display_name": {}}, "display_name"),
        ({"name": "x", "display_name": None}, "display_name"),
        ({"name": 0, "display_name": "X"}, "name"),
    ],
)
async def test_a_name_of_another_type_is_422_not_filled_in(
    tracking: httpx.AsyncClient, auth: Headers, body: dict[str, object], field: str
) -> None:
    response = await tracking.post(PROJECTS, json=body, headers=auth)
    assert response.status_code == 422, response.text
    assert [e["loc"] for e in response.json()["detail"]] == [["body", field]]


async def test_duplicate_name_is_409(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.post(PROJECTS, json={"name": "default"}, headers=auth)
    assert response.status_code == 409
    assert response.json()["detail"][0] == "EntityExistsError"


async def test_concurrent_duplicates_get_one_409(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    responses = await asyncio.gather(
        *(tracking.post(PROJECTS, json={"name": "twin"}, headers=auth) for _ in range(2))
    )
    assert sorted(r.status_code for r in responses) == [200, 409]


@pytest.mark.parametrize("name", ["Upper", "with space", "dot.ted", "x" * 51])
async def test_invalid_name_is_422(tracking: httpx.AsyncClient, auth: Headers, name: str) -> None:
    response = await tracking.post(PROJECTS, json={"name": name}, headers=auth)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"][:2] == ["body", "name"]


async def test_update_changes_given_fields_and_keeps_the_rest(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    project = await create(tracking, auth, "research", description="R&D")
    response = await tracking.put(
        f"{PROJECTS}/{project['id']}",
        json={"name": "lab", "display_name": "Lab", "description": None},
        headers=auth,
    )
    assert response.status_code == 200, response.text
    updated = response.json()
    assert (updated["name"], updated["body"]["display_name"]) == ("lab", "Lab")
    assert updated["metadata"]["description"] == "R&D"
    assert updated["body"]["updated"] >= project["body"]["updated"]


async def test_rename_to_a_taken_name_is_409(tracking: httpx.AsyncClient, auth: Headers) -> None:
    project = await create(tracking, auth, "research")
    await create(tracking, auth, "lab")
    response = await tracking.put(f"{PROJECTS}/{project['id']}", json={"name": "lab"}, headers=auth)
    assert response.status_code == 409
    assert response.json()["detail"][0] == "EntityExistsError"


async def test_default_project_cannot_be_renamed(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    url = f"{PROJECTS}/{default_project['id']}"
    response = await tracking.put(url, json={"name": "other"}, headers=auth)
    assert response.status_code == 403
    assert response.json()["detail"][0] == "IllegalOperationError"
    described = await tracking.put(url, json={"description": "Everything"}, headers=auth)
    assert described.json()["metadata"]["description"] == "Everything"


async def test_default_project_cannot_be_deleted(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.delete(f"{PROJECTS}/default", headers=auth)
    assert response.status_code == 403
    assert response.json()["detail"][0] == "IllegalOperationError"


async def test_delete_answers_null_and_the_project_is_gone(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    await create(tracking, auth, "research")
    response = await tracking.delete(f"{PROJECTS}/research", headers=auth)
    assert (response.status_code, response.json()) == (200, None)
    assert (await tracking.get(f"{PROJECTS}/research", headers=auth)).status_code == 404


async def test_project_that_still_holds_artifacts_cannot_be_deleted(
    tracking: httpx.AsyncClient, auth: Headers, tracking_app: LifespanApp
) -> None:
    project = await create(tracking, auth, "research")
    async with session_scope(tracking_app.state["sessionmaker"]) as session:
        session.add(Artifact(project_id=uuid.UUID(project["id"]), name="model"))
    response = await tracking.delete(f"{PROJECTS}/research", headers=auth)
    assert response.status_code == 403
    assert "1 artifacts" in response.json()["detail"][1]
    assert (await tracking.get(f"{PROJECTS}/research", headers=auth)).status_code == 200


# --- the deprecated /workspaces alias -----------------------------------------------------


async def test_workspaces_lists_and_gets_the_projects(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    page = (await tracking.get("/api/v1/workspaces", headers=auth)).json()
    assert [p["id"] for p in page["items"]] == [default_project["id"]]
    one = await tracking.get("/api/v1/workspaces/default", headers=auth)
    assert one.json() == default_project


# --- filters, sorting, paging -------------------------------------------------------------


@pytest.mark.parametrize(
    ("param", "value", "expected"),
    [
        ("name", "beta", ["beta"]),
        ("name", "startswith:a", ["alpha"]),
        ("name", 'oneof:["alpha","gamma"]', ["alpha", "gamma"]),
        ("display_name", "contains:ta", ["alpha", "beta"]),
        ("display_name", "Xi", ["gamma"]),
        ("created", "gte:2030-02-01 00:00:00", ["beta", "gamma"]),
        ("created", "in:2030-01-15 00:00:00,2030-02-15 00:00:00", ["beta"]),
        ("updated", "gt:2030-04-15 00:00:00", ["alpha", "gamma"]),
        ("updated", "lt:2030-04-15 00:00:00", ["default", "beta"]),
        ("created", "2030-02-01T00:00:00Z", ["beta"]),
        ("created", "2030-02-01T02:00:00+02:00", ["beta"]),
        ("created", "gte:2030-01-31T19:00:00-05:00", ["beta", "gamma"]),
        ("created", "lt:2030-02-01T00:00:00.000001Z", ["default", "alpha", "beta"]),
        ("created", "in:2030-01-15T00:00:00Z,2030-02-01 01:00:00", ["beta"]),
        ("created", "", ["default", "alpha", "beta", "gamma"]),
    ],
)
async def test_filter(
    tracking: httpx.AsyncClient,
    auth: Headers,
    three: None,
    param: str,
    value: str,
    expected: list[str],
) -> None:
    assert sorted(await listed(tracking, auth, (param, value))) == sorted(expected)


async def test_filter_by_id(tracking: httpx.AsyncClient, auth: Headers) -> None:
    project = await create(tracking, auth, "research")
    assert await listed(tracking, auth, ("id", project["id"])) == ["research"]
    prefix = project["id"].replace("-", "")[:8]
    assert await listed(tracking, auth, ("id", f"startswith:{prefix}")) == ["research"]


async def test_filters_join_with_or(
    tracking: httpx.AsyncClient, auth: Headers, three: None
) -> None:
    params = [("name", "alpha"), ("display_name", "Xi"), ("logical_operator", "or")]
    assert sorted(await listed(tracking, auth, *params)) == ["alpha", "gamma"]


@pytest.mark.parametrize(
    ("sort_by", "expected"),
    [
        ("created", ["alpha", "beta", "gamma"]),
        ("desc:created", ["gamma", "beta", "alpha"]),
        ("updated", ["beta", "gamma", "alpha"]),
        ("name", ["alpha", "beta", "gamma"]),
        ("desc:name", ["gamma", "beta", "alpha"]),
        ("display_name", ["gamma", "beta", "alpha"]),
    ],
)
async def test_sort(
    tracking: httpx.AsyncClient, auth: Headers, three: None, sort_by: str, expected: list[str]
) -> None:
    listed_names = await listed(tracking, auth, ("sort_by", sort_by))
    assert [n for n in listed_names if n != "default"] == expected


async def test_sort_by_id_follows_the_ids(
    tracking: httpx.AsyncClient, auth: Headers, three: None
) -> None:
    items = (await tracking.get(PROJECTS, params={"sort_by": "id"}, headers=auth)).json()["items"]
    ids = [uuid.UUID(p["id"]) for p in items]
    assert ids == sorted(ids)


async def test_unknown_sort_key_is_422(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.get(PROJECTS, params={"sort_by": "description"}, headers=auth)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "sort_by"]


@pytest.mark.parametrize("value", ["yesterday", "gte:", "in:2030-01-01T00:00:00Z,"])
async def test_malformed_filter_is_422(
    tracking: httpx.AsyncClient, auth: Headers, value: str
) -> None:
    response = await tracking.get(PROJECTS, params={"created": value}, headers=auth)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "created"]


async def test_page_past_the_end_is_an_empty_page(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.get(PROJECTS, params={"page": "2"}, headers=auth)
    assert response.status_code == 200
    page = response.json()
    assert (page["index"], page["total"], page["total_pages"], page["items"]) == (2, 1, 1, [])


async def test_page_beyond_a_bigint_offset_is_an_empty_page(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    page = str(10**22)
    response = await tracking.get(PROJECTS, params={"page": page, "size": "3236"}, headers=auth)
    assert response.status_code == 200
    assert (response.json()["index"], response.json()["items"]) == (10**22, [])


async def test_pages_slice_the_sorted_projects(
    tracking: httpx.AsyncClient, auth: Headers, three: None
) -> None:
    params = {"sort_by": "name", "size": "2", "page": "2"}
    page = (await tracking.get(PROJECTS, params=params, headers=auth)).json()
    assert [p["name"] for p in page["items"]] == ["default", "gamma"]
    assert (page["index"], page["max_size"], page["total"], page["total_pages"]) == (2, 2, 4, 2)


# --- authentication -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", PROJECTS),
        ("POST", PROJECTS),
        ("GET", f"{PROJECTS}/default"),
        ("PUT", f"{PROJECTS}/default"),
        ("DELETE", f"{PROJECTS}/default"),
        ("GET", "/api/v1/workspaces"),
        ("GET", "/api/v1/workspaces/default"),
    ],
)
async def test_requests_without_a_token_are_401(
    tracking: httpx.AsyncClient, method: str, path: str
) -> None:
    response = await tracking.request(method, path, json={"name": "x"})
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
