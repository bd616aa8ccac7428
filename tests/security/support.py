"""What the security tests share: the stacks' first passwords, and logging in through the
platform entrypoint."""

from __future__ import annotations

import secrets

import httpx

from tests.support.processes import LaunchedStack

ADMIN_PASSWORD = f"Sec-{secrets.token_urlsafe(12)}"
"""The platform's first admin's (``default``)."""
AGENT_PASSWORD = f"Agent-{secrets.token_urlsafe(12)}"
"""The agent-run server's first account's (``default``)."""


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def login(http: httpx.Client, stack: LaunchedStack, name: str, password: str) -> str:
    """A platform access token for ``name`` (the login's cookie dropped)."""
    response = http.post(
        stack.url("platform", "/api/v1/login"), data={"username": name, "password": password}
    )
    assert response.status_code == 200, response.text
    http.cookies.clear()
    token: str = response.json()["access_token"]
    return token
