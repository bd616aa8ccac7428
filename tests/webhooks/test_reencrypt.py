"""Rotating the key that encrypts signing secrets at rest."""

from __future__ import annotations

from cryptography.fernet import Fernet
from pydantic import SecretStr

from shared.secret_box import SecretBox
from tests.webhooks.support import deliver_through, push_body
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
    response = await deliver_through(settings, router, hook, push_body())
    assert response.status_code == 202


async def test_a_secret_no_key_decrypts_answers_503_not_500(
    create_webhook, webhooks_settings, router
):
    hook = await create_webhook("codehost")
    other = SecretStr(Fernet.generate_key().decode())
    settings = webhooks_settings.model_copy(update={"webhook_secret_keys": other})
    response = await deliver_through(settings, router, hook, push_body())
    assert response.status_code == 503
