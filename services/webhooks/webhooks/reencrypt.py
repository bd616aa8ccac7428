"""``python -m webhooks.reencrypt``: rewrite every stored signing secret under the first
of ``WEBHOOK_SECRET_KEYS``, after a new key was put in front; the old key can be dropped
once this has run. Idempotent; each row is rewritten in its own short transaction."""

from __future__ import annotations

import asyncio
import sys

from shared.db import SessionMaker, create_engine, create_sessionmaker
from shared.secret_box import SecretBox, reencrypt_rows
from webhooks.models import Webhook
from webhooks.settings import Settings


async def reencrypt(sessionmaker: SessionMaker, box: SecretBox) -> int:
    """The number of secrets rewritten. The plaintext never changes, so the intake's
    cached webhooks stay valid and no version is bumped."""

    def rotate(webhook: Webhook) -> bool:
        rotated = box.rotate(webhook.secret_ciphertext)
        if rotated is None:
            return False
        webhook.secret_ciphertext = rotated
        return True

    return await reencrypt_rows(sessionmaker, Webhook, rotate)


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
