"""``PUT /users/{id}/email-opt-in``: a user's answer to the email prompt, for oneself only."""

from __future__ import annotations

import httpx

from tests.identity.conftest import ADMIN, Login, bearer
from tests.identity.server_settings.support import member


async def me(identity: httpx.AsyncClient, token: str) -> dict[str, str]:
    response = await identity.get("/api/v1/current-user", headers=bearer(token))
    body: dict[str, str] = response.json()
    return body


async def test_email_opt_in_sets_ones_email_and_answer(identity: httpx.AsyncClient, login: Login):
    token = await login()
    user_id = (await me(identity, token))["id"]
    response = await identity.put(
        f"/api/v1/users/{user_id}/email-opt-in",
        json={"email": "ada@example.com", "email_opted_in": True, "name": "renamed"},
        headers=bearer(token),
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["body"]["email_opted_in"] is True
    assert body["metadata"]["email"] == "ada@example.com"
    # Only the answer is taken: the other fields of the body are left alone.
    assert body["name"] == ADMIN


async def test_email_opt_in_for_another_user_is_401(identity: httpx.AsyncClient, login: Login):
    admin = await login()
    other = await member(identity, login)
    other_id = (await me(identity, other))["id"]
    response = await identity.put(
        f"/api/v1/users/{other_id}/email-opt-in",
        json={"email_opted_in": True},
        headers=bearer(admin),
    )
    assert response.status_code == 401
    assert response.json() == {
        "detail": ["AuthorizationException", "Users can not opt in on behalf of another user."]
    }


async def test_email_opt_in_of_an_unknown_user_is_404(identity: httpx.AsyncClient, login: Login):
    response = await identity.put(
        "/api/v1/users/nobody/email-opt-in", json={"email_opted_in": False},
        headers=bearer(await login()),
    )  # fmt: skip
    assert response.status_code == 404
