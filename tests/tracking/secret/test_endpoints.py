"""``/secrets``: the reference's envelope, values only where it answers them, updates,
names per scope and list filters."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers, new_user
from tests.tracking.secret.support import SECRETS, Json, create_secret, listed_names


@pytest.fixture
async def ann(identity_app: LifespanApp, auth: Headers) -> tuple[str, Headers]:
    return await new_user(identity_app, auth, "ann")


async def test_create_answers_the_reference_envelope_with_the_values(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.post(
        SECRETS,
        json={"name": "aws", "values": {"key": "k1", "secret": "s1", "gone": None}},
        headers=auth,
    )
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    secret = response.json()
    assert list(secret) == ["body", "metadata", "resources", "id", "permission_denied", "name"]
    body = secret["body"]
    assert list(body) == ["created", "updated", "user_id", "private", "values"]
    assert body["private"] is False
    assert body["values"] == {"key": "k1", "secret": "s1"}
    assert secret["metadata"] == {}
    assert secret["resources"]["user"]["name"] == "default"
    assert body["user_id"] == secret["resources"]["user"]["id"]


async def test_get_answers_the_values_hydrated_or_not(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    created = await create_secret(tracking, auth, "db", {"password": "pw"})
    one = f"{SECRETS}/{created['id']}"
    hydrated = (await tracking.get(one, headers=auth)).json()
    assert hydrated["body"]["values"] == {"password": "pw"}
    assert hydrated["metadata"] == {}
    plain = await tracking.get(one, params={"hydrate": "false"}, headers=auth)
    assert plain.headers["cache-control"] == "no-store"
    assert plain.json()["body"]["values"] == {"password": "pw"}
    assert plain.json()["metadata"] is None


async def test_lists_carry_no_values(tracking: httpx.AsyncClient, auth: Headers) -> None:
    await create_secret(tracking, auth, "db", {"password": "pw"})
    for hydrate in ("false", "true"):
        page = (await tracking.get(SECRETS, params={"hydrate": hydrate}, headers=auth)).json()
        assert page["total"] == 1
        assert page["items"][0]["body"]["values"] == {}


async def test_the_list_takes_a_scope_user_id_and_refuses_a_non_uuid(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    await create_secret(tracking, auth, "db")
    scoped = await tracking.get(SECRETS, params={"scope_user": str(uuid.uuid4())}, headers=auth)
    assert scoped.json()["total"] == 1
    refused = await tracking.get(SECRETS, params={"scope_user": "AAA"}, headers=auth)
    assert refused.status_code == 422
    assert [e["loc"] for e in refused.json()["detail"]] == [["query", "scope_user"]]


async def test_update_replaces_the_values_by_default(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    created = await create_secret(tracking, auth, "db", {"user": "u", "password": "pw"})
    one = f"{SECRETS}/{created['id']}"
    response = await tracking.put(one, json={"values": {"password": "new"}}, headers=auth)
    assert response.status_code == 200, response.text
    assert response.json()["body"]["values"] == {"password": "new"}
    assert (await tracking.get(one, headers=auth)).json()["body"]["values"] == {"password": "new"}


async def test_patched_values_set_change_and_remove_keys(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    created = await create_secret(tracking, auth, "db", {"user": "u", "password": "pw"})
    one = f"{SECRETS}/{created['id']}"
    response = await tracking.put(
        one,
        params={"patch_values": "true"},
        json={"values": {"password": "new", "host": "h", "user": None, "absent": None}},
        headers=auth,
    )
    assert response.status_code == 200, response.text
    assert response.json()["body"]["values"] == {"password": "new", "host": "h"}
    assert (await tracking.get(one, headers=auth)).json()["body"]["values"] == {
        "password": "new",
        "host": "h",
    }


async def test_update_without_values_keeps_them_and_renames(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    created = await create_secret(tracking, auth, "db", {"password": "pw"})
    one = f"{SECRETS}/{created['id']}"
    response = await tracking.put(one, json={"name": "database", "private": True}, headers=auth)
    assert response.status_code == 200, response.text
    secret = response.json()
    assert secret["name"] == "database"
    assert secret["body"]["private"] is True
    assert secret["body"]["values"] == {"password": "pw"}
    assert secret["body"]["updated"] > created["body"]["updated"]


async def test_delete_then_get_is_404(tracking: httpx.AsyncClient, auth: Headers) -> None:
    created = await create_secret(tracking, auth, "db")
    one = f"{SECRETS}/{created['id']}"
    deleted = await tracking.delete(one, headers=auth)
    assert deleted.status_code == 200
    assert deleted.json() is None
    missing = await tracking.get(one, headers=auth)
    assert missing.status_code == 404
    assert missing.json()["detail"][0] == "KeyError"
    assert (await tracking.delete(one, headers=auth)).status_code == 404


async def test_a_public_name_is_unique_among_public_secrets(
    tracking: httpx.AsyncClient, auth: Headers, ann: tuple[str, Headers]
) -> None:
    await create_secret(tracking, auth, "shared")
    again = await tracking.post(SECRETS, json={"name": "shared"}, headers=ann[1])
    assert again.status_code == 409
    assert again.json()["detail"] == [
        "EntityExistsError",
        "Found an existing public secret with the same 'shared' name",
    ]


async def test_a_private_name_is_unique_among_its_owners_private_secrets(
    tracking: httpx.AsyncClient, auth: Headers, ann: tuple[str, Headers]
) -> None:
    await create_secret(tracking, auth, "mine", private=True)
    await create_secret(tracking, ann[1], "mine", private=True)
    await create_secret(tracking, auth, "mine", private=False)
    again = await tracking.post(SECRETS, json={"name": "mine", "private": True}, headers=auth)
    assert again.status_code == 409
    assert again.json()["detail"][1] == (
        "Found an existing private secret with the same 'mine' name for the same 'default' user"
    )


async def test_renaming_onto_a_taken_name_is_409(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    await create_secret(tracking, auth, "a")
    b = await create_secret(tracking, auth, "b")
    response = await tracking.put(f"{SECRETS}/{b['id']}", json={"name": "a"}, headers=auth)
    assert response.status_code == 409
    made_private = await tracking.put(
        f"{SECRETS}/{b['id']}", json={"name": "a", "private": True}, headers=auth
    )
    assert made_private.status_code == 200, made_private.text


async def test_values_over_64_kib_are_400(tracking: httpx.AsyncClient, auth: Headers) -> None:
    body = {"name": "big", "values": {"blob": "x" * (64 * 1024)}}
    response = await tracking.post(SECRETS, json=body, headers=auth)
    assert response.status_code == 400
    assert response.json()["detail"][0] == "ValueError"
    assert (await tracking.get(SECRETS, headers=auth)).json()["total"] == 0


async def test_values_must_be_strings(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.post(SECRETS, json={"name": "n", "values": {"k": 1}}, headers=auth)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "values", "k"]


async def test_list_filters_by_name_private_user_and_pages(
    tracking: httpx.AsyncClient, auth: Headers, ann: tuple[str, Headers]
) -> None:
    await create_secret(tracking, auth, "aws-prod")
    await create_secret(tracking, auth, "aws-dev", private=True)
    await create_secret(tracking, ann[1], "gcp")
    assert await listed_names(tracking, auth, ("name", "startswith:aws")) == [
        "aws-dev",
        "aws-prod",
    ]
    assert await listed_names(tracking, auth, ("private", "true")) == ["aws-dev"]
    assert await listed_names(tracking, auth, ("private", "false")) == ["aws-prod", "gcp"]
    assert await listed_names(tracking, auth, ("user", "ann")) == ["gcp"]
    assert await listed_names(tracking, auth, ("user", ann[0])) == ["gcp"]
    page = await tracking.get(SECRETS, params={"size": 2, "sort_by": "asc:name"}, headers=auth)
    assert page.json()["total_pages"] == 2
    assert [s["name"] for s in page.json()["items"]] == ["aws-dev", "aws-prod"]


async def test_unknown_or_malformed_ids(tracking: httpx.AsyncClient, auth: Headers) -> None:
    assert (await tracking.get(f"{SECRETS}/{uuid.uuid4()}", headers=auth)).status_code == 404
    assert (await tracking.get(f"{SECRETS}/not-an-id", headers=auth)).status_code == 422
    bad = await tracking.get(SECRETS, params={"private": "maybe"}, headers=auth)
    assert bad.status_code == 422


async def test_secrets_need_a_login(tracking: httpx.AsyncClient) -> None:
    assert (await tracking.get(SECRETS)).status_code == 401


async def test_the_deprecated_workspace_route_creates(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.post(
        "/api/v1/workspaces/default/secrets", json={"name": "old"}, headers=auth
    )
    assert response.status_code == 200, response.text
    secret: Json = response.json()
    assert secret["name"] == "old"


async def test_a_name_with_a_nul_character_is_refused(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.post(SECRETS, json={"name": "a\x00b"}, headers=auth)
    assert response.status_code in (400, 422), response.text
    listed = await tracking.get(SECRETS, params={"name": "a\x00b"}, headers=auth)
    assert listed.status_code < 500, listed.text


async def test_the_dashboards_calls_are_answered_as_it_reads_them(
    tracking: httpx.AsyncClient, auth: Headers, ann: tuple[str, Headers]
) -> None:
    """The secrets page creates with its ``user`` field, lists newest first (a search sends
    ``name=contains:...``) and offers a row's Edit/Delete only when the list's
    ``resources.user.body.is_admin`` says the owner is an admin; its Edit Keys sends every
    value, which replaces the stored ones."""
    _, ann_auth = ann
    mine = await tracking.post(
        SECRETS,
        json={"user": str(uuid.uuid4()), "name": "walk", "values": {"a": "1"}},
        headers=auth,
    )
    assert mine.status_code == 200, mine.text
    assert mine.json()["resources"]["user"]["name"] == "default"  # the caller, not ``user``
    await create_secret(tracking, ann_auth, "walk-ann")
    params = {"page": "1", "sort_by": "desc:created", "name": "contains:walk"}
    page = (await tracking.get(SECRETS, params=params, headers=auth)).json()
    assert [item["name"] for item in page["items"]] == ["walk-ann", "walk"]
    admin = {item["name"]: item["resources"]["user"]["body"]["is_admin"] for item in page["items"]}
    assert admin == {"walk-ann": False, "walk": True}
    one = f"{SECRETS}/{mine.json()['id']}"
    edited = await tracking.put(
        one, json={"name": "walk", "values": {"a": "1", "b": "2"}}, headers=auth
    )
    assert edited.status_code == 200, edited.text
    assert edited.json()["body"]["values"] == {"a": "1", "b": "2"}
    removed = await tracking.put(one, json={"name": "walk", "values": {"b": "2"}}, headers=auth)
    assert removed.json()["body"]["values"] == {"b": "2"}  # the key-row's Delete
