"""A password change ends every other session of the account, on every replica; an
admin's reset (deactivate, then activate with a new password) ends them all. API keys
stay, and what they mint again works."""

from __future__ import annotations

import httpx

from agent_accounts.app import create_app
from agent_accounts.settings import Settings
from tests.agent_accounts.conftest import (
    ME,
    Clock,
    Login,
    NewKey,
    bearer,
    change_password,
    new_user_with_password,
    register_worker,
)
from tests.support.asgi import client_for

BEAT: dict[str, list[str]] = {"task_ids": []}


async def _api_key_session(client: httpx.AsyncClient, key: str) -> dict[str, str]:
    response = await client.post(
        "/api/v1/login", data={"grant_type": "api-key"}, headers=bearer(key)
    )
    assert response.status_code == 200, response.text
    return bearer(response.json()["access_token"])


async def test_password_change_ends_the_other_sessions_but_the_changers(
    client: httpx.AsyncClient, admin, login: Login, new_key: NewKey, clock: Clock
):
    alice, password = await new_user_with_password(client, admin, "alice")
    changer = bearer(await login("alice", password))
    other = bearer(await login("alice", password))
    key = await new_key(changer)
    from_key = await _api_key_session(client, key["key"])
    worker = await register_worker(client, key["key"])
    clock.advance(seconds=1)

    await change_password(client, alice, changer, password)

    assert (await client.get(ME, headers=other)).status_code == 401
    assert (await client.get(ME, headers=from_key)).status_code == 401
    heartbeat = f"/api/v1/workers/{worker['worker']['id']}/heartbeat"
    assert (
        await client.post(heartbeat, json=BEAT, headers=bearer(worker["token"]))
    ).status_code == 401
    assert (await client.get(ME, headers=changer)).status_code == 200
    # The key is not a login: it still works, and mints sessions and worker tokens again.
    clock.advance(seconds=1)
    assert (await client.get(ME, headers=bearer(key["key"]))).status_code == 200
    assert (
        await client.get(ME, headers=await _api_key_session(client, key["key"]))
    ).status_code == 200
    renewed = await client.post(
        f"/api/v1/workers/{worker['worker']['id']}/token", headers=bearer(key["key"])
    )
    assert (
        await client.post(heartbeat, json=BEAT, headers=bearer(renewed.json()["token"]))
    ).status_code == 200
    # The new password logs in; the old one does not.
    assert (
        await client.get(ME, headers=bearer(await login("alice", "a-brand-new-password")))
    ).status_code == 200
    stale = await client.post(
        "/api/v1/login", data={"grant_type": "password", "username": "alice", "password": password}
    )
    assert stale.status_code == 401


async def test_a_second_change_ends_the_session_the_first_kept(
    client: httpx.AsyncClient, admin, login: Login, clock: Clock
):
    bob, password = await new_user_with_password(client, admin, "bob")
    first = bearer(await login("bob", password))
    await change_password(client, bob, first, password)
    clock.advance(seconds=1)
    second = bearer(await login("bob", "a-brand-new-password"))
    clock.advance(seconds=1)

    response = await client.patch(
        f"/api/v1/users/{bob['id']}",
        json={"password": "yet-another-password", "old_password": "a-brand-new-password"},
        headers=second,
    )

    assert response.status_code == 200
    assert (await client.get(ME, headers=first)).status_code == 401
    assert (await client.get(ME, headers=second)).status_code == 200


async def test_password_change_holds_on_another_replica(
    client: httpx.AsyncClient, agent_settings: Settings, admin, login: Login, clock: Clock
):
    erin, password = await new_user_with_password(client, admin, "erin")
    changer = bearer(await login("erin", password))
    other = bearer(await login("erin", password))
    async with client_for(create_app(agent_settings, clock=clock)) as replica:
        assert (await replica.get(ME, headers=other)).status_code == 200
        clock.advance(seconds=1)

        await change_password(client, erin, changer, password)

        assert (await replica.get(ME, headers=other)).status_code == 401
        assert (await replica.get(ME, headers=changer)).status_code == 200
