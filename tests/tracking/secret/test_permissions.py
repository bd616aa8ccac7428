"""Who may do what with a secret, as the reference rules it: a private secret exists only
for its owner, on every route and in every list (admins included); a public one is every
user's; only its owner changes whether a secret is private; backup and restore are for
admins."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
import pytest

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers, new_user
from tests.tracking.secret.support import SECRETS, Json, create_secret, listed_names

User = tuple[str, Headers]


@pytest.fixture
async def ann(identity_app: LifespanApp, auth: Headers) -> User:
    return await new_user(identity_app, auth, "ann")


@pytest.fixture
async def bob(identity_app: LifespanApp, auth: Headers) -> User:
    return await new_user(identity_app, auth, "bob")


@pytest.fixture
async def anns_private(tracking: httpx.AsyncClient, ann: User) -> Json:
    return await create_secret(tracking, ann[1], "anns", {"token": "t"}, private=True)


Route = Callable[[httpx.AsyncClient, Headers, Json], Awaitable[httpx.Response]]


async def _get(tracking: httpx.AsyncClient, auth: Headers, secret: Json) -> httpx.Response:
    return await tracking.get(f"{SECRETS}/{secret['id']}", headers=auth)


async def _update(tracking: httpx.AsyncClient, auth: Headers, secret: Json) -> httpx.Response:
    body = {"values": {"token": "stolen"}}
    return await tracking.put(f"{SECRETS}/{secret['id']}", json=body, headers=auth)


async def _delete(tracking: httpx.AsyncClient, auth: Headers, secret: Json) -> httpx.Response:
    return await tracking.delete(f"{SECRETS}/{secret['id']}", headers=auth)


@pytest.mark.parametrize("route", [_get, _update, _delete], ids=["get", "update", "delete"])
async def test_another_users_private_secret_is_404_for_users_and_admins(
    tracking: httpx.AsyncClient,
    auth: Headers,
    ann: User,
    bob: User,
    anns_private: Json,
    route: Route,
) -> None:
    for headers in (bob[1], auth):
        response = await route(tracking, headers, anns_private)
        assert response.status_code == 404, response.text
        assert response.json()["detail"][0] == "KeyError"
    owned = await tracking.get(f"{SECRETS}/{anns_private['id']}", headers=ann[1])
    assert owned.json()["body"]["values"] == {"token": "t"}


async def test_the_owner_reads_changes_and_deletes_a_private_secret(
    tracking: httpx.AsyncClient, ann: User, anns_private: Json
) -> None:
    assert (await _get(tracking, ann[1], anns_private)).json()["body"]["values"] == {"token": "t"}
    assert (await _update(tracking, ann[1], anns_private)).status_code == 200
    assert (await _delete(tracking, ann[1], anns_private)).status_code == 200


@pytest.mark.parametrize(
    "params",
    [
        [],
        [("name", "anns")],
        [("name", "contains:ann")],
        [("private", "true")],
        [("user", "ann")],
        [("scope_user", "")],
        [("logical_operator", "or"), ("private", "true"), ("name", "anns")],
    ],
    ids=["all", "name", "contains", "private", "user", "scope_user", "or"],
)
async def test_no_list_filter_shows_another_users_private_secret(
    tracking: httpx.AsyncClient,
    auth: Headers,
    ann: User,
    bob: User,
    anns_private: Json,
    params: list[tuple[str, str]],
) -> None:
    params = [(k, v or ann[0]) for k, v in params]
    for headers in (bob[1], auth):
        assert await listed_names(tracking, headers, *params) == []
    by_id = await listed_names(tracking, bob[1], ("id", anns_private["id"]))
    assert by_id == []
    assert await listed_names(tracking, ann[1], *params) == ["anns"]


async def test_a_listed_total_counts_only_what_the_caller_sees(
    tracking: httpx.AsyncClient, auth: Headers, bob: User, anns_private: Json
) -> None:
    await create_secret(tracking, auth, "public")
    page = (await tracking.get(SECRETS, headers=bob[1])).json()
    assert page["total"] == 1
    assert [s["name"] for s in page["items"]] == ["public"]


async def test_a_public_secret_is_every_users_to_read_change_and_delete(
    tracking: httpx.AsyncClient, auth: Headers, bob: User
) -> None:
    public = await create_secret(tracking, auth, "team", {"token": "t"})
    assert (await _get(tracking, bob[1], public)).json()["body"]["values"] == {"token": "t"}
    assert (await _update(tracking, bob[1], public)).json()["body"]["values"] == {"token": "stolen"}
    assert (await _delete(tracking, bob[1], public)).status_code == 200


async def test_only_the_owner_changes_whether_a_secret_is_private(
    tracking: httpx.AsyncClient, auth: Headers, bob: User
) -> None:
    public = await create_secret(tracking, auth, "team")
    one = f"{SECRETS}/{public['id']}"
    for private in (True, False):
        refused = await tracking.put(one, json={"private": private}, headers=bob[1])
        assert refused.status_code == 403
        assert refused.json()["detail"] == [
            "IllegalOperationError",
            "Only the user who created the secret is allowed to update its private status.",
        ]
    assert (await tracking.put(one, json={"private": True}, headers=auth)).status_code == 200
    assert (await tracking.get(one, headers=bob[1])).status_code == 404


async def test_a_private_secret_made_public_shows_to_everyone(
    tracking: httpx.AsyncClient, ann: User, bob: User, anns_private: Json
) -> None:
    one = f"{SECRETS}/{anns_private['id']}"
    assert (await tracking.put(one, json={"private": False}, headers=ann[1])).status_code == 200
    assert await listed_names(tracking, bob[1]) == ["anns"]


@pytest.mark.parametrize("operation", ["backup", "restore"])
async def test_backup_and_restore_are_for_admins_and_need_a_backup_store(
    tracking: httpx.AsyncClient, auth: Headers, bob: User, operation: str
) -> None:
    path = f"/api/v1/secrets_operations/{operation}"
    refused = await tracking.put(path, headers=bob[1])
    assert refused.status_code == 403
    assert refused.json()["detail"][0] == "IllegalOperationError"
    answered = await tracking.put(path, headers=auth)
    assert answered.status_code == 501
    assert answered.json()["detail"] == [
        "NotImplementedError",
        f"Unable to {operation} secrets: No backup secrets store is configured.",
    ]
