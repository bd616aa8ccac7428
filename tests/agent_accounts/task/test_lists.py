"""``GET /api/v1/tasks`` and ``GET /api/v1/sessions``: kitaru's cursor pages, filters and
who may list what."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from tests.agent_accounts.conftest import Clock, NewKey, NewUser, bearer, register_worker


async def _task(client: httpx.AsyncClient, headers: dict[str, str], **extra: Any) -> dict[str, Any]:
    body = {"kind": "evaluator", "timeout_seconds": 60, **extra}
    response = await client.post("/api/v1/tasks", json=body, headers=headers)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def _page(
    client: httpx.AsyncClient, path: str, headers: dict[str, str], **params: Any
) -> dict[str, Any]:
    response = await client.get(path, params=params, headers=headers)
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()
    return page


async def _claimed(
    client: httpx.AsyncClient, admin: dict[str, str], new_key: NewKey, **allowlist: Any
) -> tuple[str, dict[str, str]]:
    """A new task, claimed by a new worker: its id and its task token's headers."""
    task = await _task(client, admin, **allowlist)
    worker = await register_worker(client, (await new_key())["key"])
    claimed = await client.post("/api/v1/tasks/claim", json={"max_tasks": 100},
                                headers=bearer(worker["token"]))  # fmt: skip
    [item] = [i for i in claimed.json()["tasks"] if i["task"]["id"] == task["id"]]
    return task["id"], bearer(item["token"])


@pytest.mark.parametrize("sort", ["created:desc", "created:asc"])
async def test_task_pages_follow_the_cursor_while_tasks_are_created(
    client: httpx.AsyncClient, admin: dict[str, str], clock: Clock, sort: str
):
    """Every task there at the start is listed once, whatever is created between pages;
    newer tasks come after the cursor only in ascending order."""
    before = []
    for _ in range(5):
        clock.advance(seconds=1)
        before.append((await _task(client, admin))["id"])
    seen: list[str] = []
    added: list[str] = []
    cursor = None
    while True:
        params = {"size": 2, "sort": sort, **({"cursor": cursor} if cursor else {})}
        page = await _page(client, "/api/v1/tasks", admin, **params)
        seen += [item["id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        clock.advance(seconds=1)
        added.append((await _task(client, admin))["id"])
    assert len(seen) == len(set(seen))
    if sort == "created:desc":
        assert seen == before[::-1]
    else:
        assert seen == before + added


async def test_rows_created_at_the_same_instant_page_by_id(
    client: httpx.AsyncClient, admin: dict[str, str]
):
    """The clock stands still: ties on ``created`` are broken by id, never repeated."""
    ids = {(await _task(client, admin))["id"] for _ in range(7)}
    seen: list[str] = []
    cursor = None
    while True:
        page = await _page(client, "/api/v1/tasks", admin, size=3,
                           **({"cursor": cursor} if cursor else {}))  # fmt: skip
        seen += [item["id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        await _task(client, admin)  # lands before or after the cursor, never twice
    assert ids <= set(seen)
    assert len(seen) == len(set(seen))


async def test_task_filters_are_kitarus_fields(
    client: httpx.AsyncClient, admin: dict[str, str], new_key: NewKey
):
    pending = await _task(client, admin, kind="importer")
    claimed_id, _ = await _claimed(client, admin, new_key)

    def ids(page: dict[str, Any]) -> set[str]:
        return {item["id"] for item in page["items"]}

    async def matching(tree: dict[str, Any]) -> set[str]:
        return ids(await _page(client, "/api/v1/tasks", admin, filter=json.dumps(tree)))

    assert await matching({"field": "status", "op": "eq", "value": "claimed"}) == {claimed_id}
    assert await matching({"field": "kind", "op": "in", "value": ["importer"]}) == {pending["id"]}
    assert await matching({"field": "worker_id", "op": "is_null", "value": True}) == {pending["id"]}
    either = {"or": [{"field": "id", "op": "eq", "value": pending["id"]},
                     {"field": "id", "op": "eq", "value": claimed_id}]}  # fmt: skip
    assert await matching(either) == {pending["id"], claimed_id}
    assert await matching({"not": {"field": "status", "op": "ne", "value": "pending"}}) == {
        pending["id"]
    }


def _forged(payload: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"cursor": "not a cursor"}, "cursor"),
        ({"cursor": _forged({"s": "created:desc", "f": "", "v": {"a": 1}, "id": "x"})}, "cursor"),
        ({"cursor": _forged({"s": "created:desc", "f": "", "v": "2026-01-01", "id": 7})}, "cursor"),
        ({"cursor": _forged(["created:desc"])}, "cursor"),
        ({"sort": "name:asc"}, "sort"),
        ({"sort": "created"}, "sort"),
        ({"size": "0"}, "size"),
        ({"size": "1001"}, "size"),
        ({"filter": "{not json"}, "filter"),
        ({"filter": json.dumps({"field": "agent_id", "op": "eq", "value": "x"})}, "filter"),
        ({"filter": json.dumps({"field": "status", "op": "eq", "value": "bogus"})}, "filter"),
        ({"filter": json.dumps({"field": "kind", "op": "in", "value": ["agent", 3]})}, "filter"),
        ({"filter": json.dumps({"field": "status", "op": "gt", "value": "pending"})}, "filter"),
        ({"filter": json.dumps({"field": "id", "op": "eq", "value": "nope"})}, "filter"),
        ({"filter": json.dumps({"field": "id", "op": "like", "value": "x"})}, "filter"),
        ({"filter": json.dumps({"and": []})}, "filter"),
    ],
)
async def test_bad_list_input_is_a_422_naming_the_parameter(
    client: httpx.AsyncClient, admin: dict[str, str], params: dict[str, str], where: str
):
    await _task(client, admin)
    for path in ("/api/v1/tasks", "/api/v1/sessions"):
        response = await client.get(path, params=params, headers=admin)
        assert response.status_code == 422, (path, response.text)
        [error] = response.json()["detail"]
        assert error["loc"] == ["query", where]


async def test_a_cursor_is_refused_with_another_sort_or_filter(
    client: httpx.AsyncClient, admin: dict[str, str]
):
    for _ in range(3):
        await _task(client, admin)
    kind = {"field": "kind", "op": "eq", "value": "evaluator"}
    first = await _page(client, "/api/v1/tasks", admin, size=1, filter=json.dumps(kind))
    cursor = first["next_cursor"]
    # The same tree, spelled differently, is the same filter.
    respelled = json.dumps({"value": "evaluator", "op": "eq", "field": "kind"}, indent=1)
    same = await _page(client, "/api/v1/tasks", admin, size=1, filter=respelled, cursor=cursor)
    assert same["items"][0]["id"] != first["items"][0]["id"]
    for params in (
        {"filter": json.dumps({**kind, "value": "importer"})},
        {},
        {"filter": json.dumps(kind), "sort": "created:asc"},
    ):
        refused = await client.get("/api/v1/tasks", params={"cursor": cursor, **params},
                                   headers=admin)  # fmt: skip
        assert refused.status_code == 422, params
        assert refused.json()["detail"][0]["loc"] == ["query", "cursor"]


async def test_every_account_lists_every_task_and_workers_and_tasks_may_not(
    client: httpx.AsyncClient, admin: dict[str, str], new_user: NewUser, new_key: NewKey
):
    theirs = await _task(client, admin)
    _, user = await new_user()
    assert theirs["id"] in {t["id"] for t in (await _page(client, "/api/v1/tasks", user))["items"]}
    _, task_token = await _claimed(client, admin, new_key)
    worker = await register_worker(client, (await new_key())["key"])
    for headers, status in ((bearer(worker["token"]), 403), (task_token, 403), ({}, 401)):
        assert (await client.get("/api/v1/tasks", headers=headers)).status_code == status


async def test_a_task_token_lists_only_the_sessions_its_task_recorded(
    client: httpx.AsyncClient, admin: dict[str, str], new_key: NewKey
):
    granted = (await client.post("/api/v1/sessions", json={"name": "g"}, headers=admin)).json()
    task_id, token = await _claimed(client, admin, new_key, session_ids=[granted["id"]])
    _, other_token = await _claimed(client, admin, new_key)
    mine = await client.post("/api/v1/sessions", json={"name": "mine"}, headers=token)
    assert mine.status_code == 201
    assert mine.json()["task_id"] == task_id
    await client.post("/api/v1/sessions", json={"name": "theirs"}, headers=other_token)

    listed = await _page(client, "/api/v1/sessions", token)
    assert [s["id"] for s in listed["items"]] == [mine.json()["id"]]
    # A filter cannot widen the scope.
    wider = json.dumps({"field": "id", "op": "eq", "value": granted["id"]})
    assert (await _page(client, "/api/v1/sessions", token, filter=wider))["items"] == []
    everything = await _page(client, "/api/v1/sessions", admin)
    assert len(everything["items"]) == 3
    by_task = json.dumps({"field": "task_id", "op": "eq", "value": task_id})
    assert [s["name"] for s in (await _page(client, "/api/v1/sessions", admin,
                                            filter=by_task))["items"]] == ["mine"]  # fmt: skip
    worker = await register_worker(client, (await new_key())["key"])
    refused = await client.get("/api/v1/sessions", headers=bearer(worker["token"]))
    assert refused.status_code == 403
    assert refused.json() == {"detail": "Worker credentials are not accepted on this route."}


async def test_sessions_list_with_their_data_only_when_asked(
    client: httpx.AsyncClient, admin: dict[str, str]
):
    await client.post("/api/v1/sessions", json={"name": "s", "data": {"a": 1}}, headers=admin)
    [summary] = (await _page(client, "/api/v1/sessions", admin))["items"]
    assert "data" not in summary
    assert summary["task_id"] is None
    [full] = (await _page(client, "/api/v1/sessions", admin, include_payloads="true"))["items"]
    assert full["data"] == {"a": 1}
    named = json.dumps({"field": "name", "op": "startswith", "value": "s"})
    assert len((await _page(client, "/api/v1/sessions", admin, filter=named))["items"]) == 1
