"""Each list's document names the sorts it takes and the form of its cursor, and the list
takes exactly those."""

from __future__ import annotations

import base64
import re
from typing import Any, cast

import httpx

LISTS = (
    "/api/v1/accounts",
    "/api/v1/api-keys",
    "/api/v1/devices",
    "/api/v1/sessions",
    "/api/v1/tasks",
    "/api/v1/workers",
)


def parameter(document: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    """The schema ``document`` gives query parameter ``name`` of ``GET path``."""
    [schema] = [
        p["schema"] for p in document["paths"][path]["get"]["parameters"] if p["name"] == name
    ]
    return cast(dict[str, Any], schema)


def cursor_pattern(document: dict[str, Any], path: str) -> re.Pattern[str]:
    [form] = [s for s in parameter(document, path, "cursor")["anyOf"] if s.get("type") == "string"]
    return re.compile(form["pattern"])


async def test_documented_sorts_are_the_sorts_each_list_takes(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    document = (await client.get("/openapi.json")).json()
    for path in LISTS:
        sort = parameter(document, path, "sort")
        assert sort["default"] in sort["enum"], path
        keys = sorted({value.split(":")[0] for value in sort["enum"]})
        assert sort["enum"] == [f"{k}:{d}" for k in keys for d in ("asc", "desc")], path
        for value in sort["enum"]:
            response = await client.get(path, params={"sort": value}, headers=admin)
            assert response.status_code != 422, (path, value, response.text)
        refused = await client.get(path, params={"sort": "zzz:asc"}, headers=admin)
        assert refused.status_code == 422, (path, refused.text)
        assert f"use one of {keys}" in refused.text, (path, refused.text)


async def test_a_cursor_has_the_documented_form_and_one_not_issued_is_refused(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    document = (await client.get("/openapi.json")).json()
    for path in LISTS:
        pattern = cursor_pattern(document, path)
        made = base64.urlsafe_b64encode(b'{"s":"created:desc"}').decode().rstrip("=")
        assert pattern.match(made), path
        refused = await client.get(path, params={"cursor": made}, headers=admin)
        assert refused.status_code == 422, (path, refused.text)
        assert "The cursor is malformed." in refused.text, (path, refused.text)
        assert not pattern.match("not a cursor"), path
        off_form = await client.get(path, params={"cursor": "not a cursor"}, headers=admin)
        assert off_form.status_code == 422, (path, off_form.text)


async def test_each_issued_cursor_has_the_documented_form(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    document = (await client.get("/openapi.json")).json()
    pattern = cursor_pattern(document, "/api/v1/api-keys")
    for name in ("first", "second"):
        created = await client.post("/api/v1/api-keys", json={"name": name}, headers=admin)
        assert created.status_code == 201, created.text
    page = (await client.get("/api/v1/api-keys", params={"size": 1}, headers=admin)).json()
    assert pattern.match(page["next_cursor"]), page
    following = await client.get(
        "/api/v1/api-keys", params={"size": 1, "cursor": page["next_cursor"]}, headers=admin
    )
    assert following.status_code == 200, following.text
