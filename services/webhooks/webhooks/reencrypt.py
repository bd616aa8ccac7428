"""``python -m webhooks.reencrypt``: rewrite every stored signing secret under the first
of ``WEBHOOK_SECRET_KEYS``, after a new key was put in front; the old key can be dropped
once this has run. Idempotent; each row is rewritten in its own short transaction."""

from __future__ import annotations

import asyncio
import sys

from sqlmodel import col, select

from shared.db import SessionMaker, create_engine, create_sessionmaker, session_scope
from webhooks.core.crypto import SecretBox
from webhooks.models import Webhook
from webhooks.settings import Settings


async def reencrypt(sessionmaker: SessionMaker, box: SecretBox) -> int:
    """The number of secrets rewritten. The plaintext never changes, so the intake's
    cached webhooks stay valid and no version is bumped."""
    async with session_scope(sessionmaker) as session:
        ids = list((await session.exec(select(Webhook.id).order_by(col(Webhook.id)))).all())
    rewritten = 0
    for webhook_id in ids:
        async with session_scope(sessionmaker) as session:
            webhook = await session.get(Webhook, webhook_id)
            if webhook is None:
                continue
            rotated = box.rotate(webhook.secret_ciphertext)
            if rotated is not None:
                webhook.secret_ciphertext = rotated
                rewritten += 1
    return rewritten


async def _main(settings: Settings) -> int:
    engine = create_engine(settings.database_url)
    try:
        return await reencrypt(create_sessionmaker(engine), SecretBox(settings.webhook_secret_keys))
    finally:
        await engine.dispose()


def main() -> None:
    count = asyncio.run(_main(Settings()))
    print(f"re-encrypted {count} webhook secrets under the first key")  # noqa: T201
    sys.exit(0)


if __name__ == "__main__":
    main()
