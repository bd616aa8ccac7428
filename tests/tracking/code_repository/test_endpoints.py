"""What only code repositories do: ``source``, ``config``, the ``project_name_or_id``
override and the deprecated ``/workspaces/{p}/code_repositories`` routes. What they share
with artifacts is in ``tests/tracking/artifact/test_scoped.py``."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.tracking.artifact.support import CODE_REPOSITORY, SOURCE, Headers, names, new_project

Json = dict[str, Any]
create = CODE_REPOSITORY.create
REPOS = CODE_REPOSITORY.path


def workspace(project: str) -> str:
    return f"/api/v1/workspaces/{project}/code_repositories"


async def update(
    tracking: httpx.AsyncClient, auth: Headers, repo: Json, **body: Any
) -> httpx.Response:
    return await tracking.put(CODE_REPOSITORY.one(repo["id"]), json=body, headers=auth)


# --- create -------------------------------------------------------------------------------


async def test_create_answers_source_logo_config_and_description(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    repo = await create(
        tracking, auth, default_project, "repo", logo_url="https://x/logo.png", description="d"
    )
    assert list(repo["body"]) == [
        "created",
        "updated",
        "user_id",
        "project_id",
        "source",
        "logo_url",
    ]
    assert (repo["body"]["source"], repo["body"]["logo_url"]) == (SOURCE, "https://x/logo.png")
    assert repo["metadata"] == {"config": {"owner": "me"}, "description": "d"}
    assert list(repo["resources"]) == ["user"]


async def test_optional_fields_default_to_null(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    repo = await create(tracking, auth, default_project, "repo")
    assert (repo["body"]["logo_url"], repo["metadata"]["description"]) == (None, None)


async def test_source_keeps_its_extra_keys(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    source = {**SOURCE, "type": "distribution_package", "package_name": "zenml", "version": "1"}
    repo = await create(tracking, auth, default_project, "repo", source=source)
    assert repo["body"]["source"] == source


@pytest.mark.parametrize(
    ("change", "location"),
    [
        ({"source": {**SOURCE, "type": "nonsense"}}, ["body", "source", "type"]),
        ({"source": {"type": "internal"}}, ["body", "source", "module"]),
        ({"source": "zenml.GitHub"}, ["body", "source"]),
        ({"config": ["not", "an", "object"]}, ["body", "config"]),
        ({"config": None}, ["body", "config"]),
        ({"name": "x" * 256}, ["body", "name"]),
        ({"description": "x" * 65536}, ["body", "description"]),
        ({"project": "nope"}, ["body", "project"]),
    ],
)
async def test_invalid_create_body_is_422_naming_the_field(
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    change: Json,
    location: list[str],
) -> None:
    body = {**CODE_REPOSITORY.body(default_project, "repo"), **change}
    response = await tracking.post(REPOS, json=body, headers=auth)
    assert response.status_code == 422
    assert location in [error["loc"] for error in response.json()["detail"]]


async def test_project_name_or_id_query_overrides_the_body_project(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    other = await new_project(tracking, auth, "other")
    response = await tracking.post(
        REPOS,
        params={"project_name_or_id": "other"},
        json=CODE_REPOSITORY.body(default_project, "repo"),
        headers=auth,
    )
    assert response.json()["body"]["project_id"] == other["id"]


async def test_deprecated_workspace_route_creates_in_the_path_project(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    other = await new_project(tracking, auth, "other")
    body = CODE_REPOSITORY.body(default_project, "repo")
    response = await tracking.post(workspace("other"), json=body, headers=auth)
    assert response.status_code == 200
    assert response.json()["body"]["project_id"] == other["id"]


@pytest.mark.parametrize("where", ["query", "path"])
async def test_unknown_project_name_or_id_on_create_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, where: str
) -> None:
    body = CODE_REPOSITORY.body(default_project, "repo")
    params = {"project_name_or_id": "nowhere"} if where == "query" else {}
    path = workspace("nowhere") if where == "path" else REPOS
    response = await tracking.post(path, params=params, json=body, headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"] == [
        "KeyError",
        "Unable to get project with name or ID 'nowhere': No project with this name or ID found",
    ]


@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_deprecated_workspace_routes_need_a_token(
    tracking: httpx.AsyncClient, method: str
) -> None:
    response = await tracking.request(method, workspace("default"), json={})
    assert response.status_code == 401


# --- update -------------------------------------------------------------------------------


async def test_update_changes_the_fields_sent(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    repo = await create(tracking, auth, default_project, "repo", description="old")
    source = {**SOURCE, "attribute": "GitLabCodeRepository"}
    changed = (
        await update(
            tracking, auth, repo, name="renamed", config={"a": 1}, source=source, logo_url="l"
        )
    ).json()
    assert (changed["name"], changed["body"]["source"], changed["body"]["logo_url"]) == (
        "renamed",
        source,
        "l",
    )
    assert changed["metadata"] == {"config": {"a": 1}, "description": "old"}


async def test_update_with_nulls_changes_nothing_but_updated(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    repo = await create(tracking, auth, default_project, "repo", description="d", logo_url="l")
    nulls = dict.fromkeys(("name", "config", "source", "logo_url", "description"))
    changed = (await update(tracking, auth, repo, **nulls)).json()
    changed["body"]["updated"] = repo["body"]["updated"]
    assert changed == repo


async def test_update_with_an_invalid_source_is_422(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    repo = await create(tracking, auth, default_project, "repo")
    response = await update(tracking, auth, repo, source={"module": "m", "type": "nonsense"})
    assert response.status_code == 422


# --- list ---------------------------------------------------------------------------------


@pytest.fixture
async def here_and_there(tracking: httpx.AsyncClient, auth: Headers, default_project: Json) -> None:
    """``here`` in the default project, ``there`` in ``other``."""
    other = await new_project(tracking, auth, "other")
    await create(tracking, auth, default_project, "here")
    await create(tracking, auth, other, "there")


@pytest.mark.usefixtures("here_and_there")
@pytest.mark.parametrize(
    ("path", "params", "expected"),
    [
        (REPOS, [("project_name_or_id", "other")], ["there"]),
        (REPOS, [("project", "default"), ("project_name_or_id", "other")], ["there"]),
        (REPOS, [("project", "other"), ("project_name_or_id", "")], ["there"]),
        (workspace("other"), [], ["there"]),
        (workspace("other"), [("project_name_or_id", "default")], ["there"]),
        (workspace("other"), [("project", "default")], ["there"]),
    ],
)
async def test_project_name_or_id_overrides_the_project_filter(
    tracking: httpx.AsyncClient,
    auth: Headers,
    path: str,
    params: list[tuple[str, str]],
    expected: list[str],
) -> None:
    assert names(await tracking.get(path, params=tuple(params), headers=auth)) == expected


@pytest.mark.parametrize(
    ("path", "params"),
    [(REPOS, {"project_name_or_id": "nowhere"}), (workspace("nowhere"), {})],
)
async def test_list_in_an_unknown_project_name_or_id_is_404(
    tracking: httpx.AsyncClient, auth: Headers, path: str, params: dict[str, str]
) -> None:
    response = await tracking.get(path, params=params, headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"][0] == "KeyError"


@pytest.mark.parametrize("sort_by", ["tags", "latest_version", "has_custom_name"])
async def test_artifact_only_sort_keys_are_422(
    tracking: httpx.AsyncClient, auth: Headers, sort_by: str
) -> None:
    response = await tracking.get(REPOS, params={"sort_by": sort_by}, headers=auth)
    assert response.status_code == 422


async def test_unknown_filters_are_ignored(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    await create(tracking, auth, default_project, "repo")
    params = {"tags": "x", "has_custom_name": "maybe", "colour": str(uuid.uuid4())}
    assert names(await tracking.get(REPOS, params=params, headers=auth)) == ["repo"]
