"""Helpers of the device flow: start an authorization, approve it, poll for the token."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"

Authorize = Callable[..., Awaitable[dict[str, Any]]]
Poll = Callable[..., Awaitable[httpx.Response]]
Approve = Callable[..., Awaitable[httpx.Response]]


@pytest.fixture
def authorize(client: httpx.AsyncClient) -> Authorize:
    """``POST /device_authorization`` as the CLI sends it; its JSON answer."""

    async def _authorize(**fields: str) -> dict[str, Any]:
        form = {"hostname": "laptop", "os": "Linux", "python_version": "3.12.1",
                "client_version": "0.27.2", **fields}  # fmt: skip
        response = await client.post("/api/v1/device_authorization", data=form)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    return _authorize


@pytest.fixture
def approve(client: httpx.AsyncClient, admin: dict[str, str]) -> Approve:
    """``POST /devices/{id}/verify`` (as the admin unless other headers are given)."""

    async def _approve(
        device: dict[str, Any],
        *,
        user_code: str | None = None,
        trusted: bool = False,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        return await client.post(
            f"/api/v1/devices/{device['device_id']}/verify",
            json={"user_code": user_code or device["user_code"], "trusted": trusted},
            headers=headers or admin,
        )

    return _approve


@pytest.fixture
def poll(client: httpx.AsyncClient) -> Poll:
    """One poll of the token endpoint with the device grant."""

    async def _poll(device: dict[str, Any], *, device_code: str | None = None) -> httpx.Response:
        return await client.post(
            "/api/v1/login",
            data={
                "grant_type": DEVICE_GRANT,
                "device_id": str(device["device_id"]),
                "device_code": device_code or device["device_code"],
            },
        )

    return _poll


async def logged_in_device(
    authorize: Authorize, approve: Approve, poll: Poll, **approval: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An approved device and the token answer of its first poll."""
    device = await authorize()
    assert (await approve(device, **approval)).status_code == 200
    response = await poll(device)
    assert response.status_code == 200, response.text
    return device, response.json()


LoggedIn = Callable[..., Awaitable[tuple[dict[str, Any], dict[str, Any]]]]


@pytest.fixture
def logged_in(authorize: Authorize, approve: Approve, poll: Poll) -> LoggedIn:
    """:func:`logged_in_device`, approved with the given ``headers``."""

    async def _logged_in(**approval: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        return await logged_in_device(authorize, approve, poll, **approval)

    return _logged_in
