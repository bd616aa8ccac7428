"""Rotating the key that encrypts signing secrets at rest."""

from __future__ import annotations

import httpx
from cryptography.fernet import Fernet
from pydantic import SecretStr

from tests.support.asgi import running
from tests.webhooks.support import codehost_headers, push_body
from webhooks.app import create_app
from webhooks.core.crypto import SecretBox
from webhooks.reencrypt import reencrypt


async def test_secrets_move_to_a_new_key_and_the_old_key_can_go(
    create_webhook, webhooks_app, webhooks_settings, router
):
    hook = await create_webhook("codehost")
    old = webhooks_settings.webhook_secret_keys.get_secret_value()
    new = Fernet.generate_key().decode()
    sessionmaker = webhooks_app.state["sessionmaker"]

    both = SecretBox(SecretStr(f"{new},{old}"))
    assert await reencrypt(sessionmaker, both) == 1
    assert await reencrypt(sessionmaker, both) == 0  # already under the new key

    settings = webhooks_settings.model_copy(update={"webhook_secret_keys": SecretStr(new)})
    async with running(create_app(settings, http_transport=router)) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            body = push_body()
            response = await client.post(
                f"/api/v1/webhooks/codehost/{hook['id']}/events",
                content=body,
                headers=codehost_headers(hook["secret"], body),
            )
    assert response.status_code == 202


async def test_a_secret_no_key_decrypts_answers_503_not_500(
    create_webhook, webhooks_settings, router
):
    hook = await create_webhook("codehost")
    other = SecretStr(Fernet.generate_key().decode())
    settings = webhooks_settings.model_copy(update={"webhook_secret_keys": other})
    async with running(create_app(settings, http_transport=router)) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            body = push_body()
            response = await client.post(
                f"/api/v1/webhooks/codehost/{hook['id']}/events",
                content=body,
                headers=codehost_headers(hook["secret"], body),
            )
    assert response.status_code == 503
