"""A password change drops the account's other devices (their codes refresh no more)
but the changer's; an admin's reset drops them all."""

from __future__ import annotations

import httpx

from tests.agent_accounts.conftest import (
    ME,
    Clock,
    Login,
    bearer,
    change_password,
    new_user_with_password,
)
from tests.agent_accounts.device.conftest import LoggedIn, Poll


async def test_password_change_drops_the_other_devices_but_the_changers(
    client: httpx.AsyncClient,
    admin,
    login: Login,
    clock: Clock,
    logged_in: LoggedIn,
    poll: Poll,
):
    carol, password = await new_user_with_password(client, admin, "carol")
    carol_session = bearer(await login("carol", password))
    laptop, laptop_token = await logged_in(headers=carol_session)
    desktop, desktop_token = await logged_in(headers=carol_session)
    laptop_session = bearer(laptop_token["access_token"])
    desktop_session = bearer(desktop_token["access_token"])
    clock.advance(seconds=10)

    await change_password(client, carol, laptop_session, password)

    assert (await client.get(ME, headers=desktop_session)).status_code == 401
    assert (await client.get(ME, headers=carol_session)).status_code == 401
    # The other device's code no longer refreshes; the changer's device's does.
    assert (await poll(desktop)).json()["error"] == "invalid_grant"
    assert (await client.get(ME, headers=laptop_session)).status_code == 200
    clock.advance(seconds=10)
    refreshed = await poll(laptop)
    assert refreshed.status_code == 200
    assert (
        await client.get(ME, headers=bearer(refreshed.json()["access_token"]))
    ).status_code == 200
    devices = await client.get("/api/v1/devices", headers=laptop_session)
    assert [d["id"] for d in devices.json()["items"]] == [laptop["device_id"]]


async def test_admin_reset_ends_every_session_and_device(
    client: httpx.AsyncClient,
    admin,
    login: Login,
    clock: Clock,
    logged_in: LoggedIn,
    poll: Poll,
):
    dave, password = await new_user_with_password(client, admin, "dave")
    session = bearer(await login("dave", password))
    device, _ = await logged_in(headers=session)
    clock.advance(seconds=10)

    reset = await client.post(f"/api/v1/users/{dave['id']}/deactivate", headers=admin)
    activated = await client.post(
        f"/api/v1/users/{dave['id']}/activate",
        json={"activation_token": reset.json()["activation_token"], "password": "dave-reset-pw"},
    )
    assert activated.status_code == 200
    clock.advance(seconds=10)

    assert (await client.get(ME, headers=session)).status_code == 401
    # Before, the device's code refreshed again once the account was active.
    assert (await poll(device)).json()["error"] == "invalid_grant"
    assert (
        await client.get(ME, headers=bearer(await login("dave", "dave-reset-pw")))
    ).status_code == 200
