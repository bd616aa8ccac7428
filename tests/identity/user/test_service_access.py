"""Service tokens on ``/users``: they may list users (with the ``id`` filter other services
use to fetch creators in one call) and do nothing else."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from tests.identity.conftest import ADMIN, Login, bearer, tracking_service_token

PASSWORD = "a long enough password"


@pytest.fixture
async def service_token(identity: httpx.AsyncClient) -> str:
    return await tracking_service_token(identity)


async def _create(identity: httpx.AsyncClient, admin: str, name: str) -> str:
    response = await identity.post(
        "/api/v1/users",
        json={"name": name, "is_admin": False, "password": PASSWORD, "active": True},
        headers=bearer(admin),
    )
    assert response.status_code == 200, response.text
    user_id: str = response.json()["id"]
    return user_id


def oneof(*ids: object) -> str:
    return "oneof:" + json.dumps([str(i) for i in ids])


async def test_service_token_lists_users_by_ids(
    identity: httpx.AsyncClient, login: Login, service_token: str
):
    admin = await login()
    alice = await _create(identity, admin, "alice")
    await _create(identity, admin, "bob")
    carol = await _create(identity, admin, "carol")

    response = await identity.get(
        "/api/v1/users",
        params={"id": oneof(alice, carol, uuid.uuid4())},
        headers=bearer(service_token),
    )

    assert response.status_code == 200
    page = response.json()
    assert page["total"] == 2
    assert {item["name"] for item in page["items"]} == {"alice", "carol"}
    assert all(item["metadata"] is None for item in page["items"])


async def test_service_token_lists_all_users_without_a_filter(
    identity: httpx.AsyncClient, service_token: str
):
    response = await identity.get("/api/v1/users", headers=bearer(service_token))
    assert response.status_code == 200
    assert [item["name"] for item in response.json()["items"]] == [ADMIN]


async def test_admin_may_use_the_id_filter_too(identity: httpx.AsyncClient, login: Login):
    admin = await login()
    alice = await _create(identity, admin, "alice")

    single = await identity.get("/api/v1/users", params={"id": alice}, headers=bearer(admin))
    empty = await identity.get("/api/v1/users", params={"id": "oneof:[]"}, headers=bearer(admin))

    assert [item["id"] for item in single.json()["items"]] == [alice]
    assert empty.json()["total"] == 0


async def test_non_admin_user_still_cannot_list_users(identity: httpx.AsyncClient, login: Login):
    await _create(identity, await login(), "alice")
    response = await identity.get("/api/v1/users", headers=bearer(await login("alice", PASSWORD)))
    assert response.status_code == 403


@pytest.mark.parametrize(
    "value",
    [
        'oneof:["not-a-uuid"]',
        "oneof:not-a-list",
        'oneof:{"a": 1}',
        "oneof:[1, 2]",
        "oneof:" + "[" * 5000,
    ],
)
async def test_malformed_id_filter_is_422(
    identity: httpx.AsyncClient, service_token: str, value: str
):
    response = await identity.get(
        "/api/v1/users", params={"id": value}, headers=bearer(service_token)
    )
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "id"]


async def test_id_equal_to_a_non_uuid_matches_nobody(
    identity: httpx.AsyncClient, service_token: str
):
    # The reference's rule for UUID fields: an invalid UUID in equals matches nothing.
    response = await identity.get(
        "/api/v1/users", params={"id": "not-a-uuid"}, headers=bearer(service_token)
    )
    assert response.status_code == 200
    assert response.json()["total"] == 0


async def test_a_thousand_ids_fit_in_one_call(identity: httpx.AsyncClient, service_token: str):
    response = await identity.get(
        "/api/v1/users",
        params={"id": oneof(*(uuid.uuid4() for _ in range(1000))), "size": 1000},
        headers=bearer(service_token),
    )
    assert response.status_code == 200
    assert response.json()["total"] == 0


async def test_service_token_cannot_create_users(identity: httpx.AsyncClient, service_token: str):
    response = await identity.post(
        "/api/v1/users",
        json={"name": "mallory", "is_admin": True, "password": PASSWORD},
        headers=bearer(service_token),
    )
    assert response.status_code == 403
    assert response.json()["detail"][0] == "IllegalOperationError"


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("GET", "", None),
        ("PUT", "", {"full_name": "Changed"}),
        ("PUT", "/deactivate", None),
        ("DELETE", "", None),
    ],
)
async def test_service_token_cannot_touch_one_user(
    identity: httpx.AsyncClient,
    login: Login,
    service_token: str,
    method: str,
    suffix: str,
    body: dict[str, str] | None,
):
    alice = await _create(identity, await login(), "alice")
    response = await identity.request(
        method, f"/api/v1/users/{alice}{suffix}", json=body, headers=bearer(service_token)
    )
    assert response.status_code == 403
    assert response.json()["detail"][0] == "IllegalOperationError"
    assert await login("alice", PASSWORD)
