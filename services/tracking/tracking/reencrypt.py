"""``python -m tracking.reencrypt``: rewrite every stack component's stored secrets under
the first of ``COMPONENT_SECRET_KEYS``, after a new key was put in front; the old key can be
dropped once this has run. Idempotent; each component is rewritten in its own short
transaction, without touching its ``updated`` time (the secrets' plaintext is unchanged)."""

from __future__ import annotations

import asyncio
import sys

from shared.db import SessionMaker, create_engine, create_sessionmaker
from shared.secret_box import reencrypt_rows
from tracking.component.secrets import ComponentSecrets
from tracking.models import StackComponent
from tracking.settings import Settings


async def reencrypt(sessionmaker: SessionMaker, secrets: ComponentSecrets) -> int:
    """The number of components whose secrets were rewritten."""
    return await reencrypt_rows(sessionmaker, StackComponent, secrets.rotate)


async def _main(settings: Settings) -> int:
    engine = create_engine(settings.database_url)
    try:
        return await reencrypt(create_sessionmaker(engine), ComponentSecrets(settings.secret_box()))
    finally:
        await engine.dispose()


def main() -> None:
    count = asyncio.run(_main(Settings()))
    print(f"re-encrypted the secrets of {count} stack components under the first key")  # noqa: T201
    sys.exit(0)


if __name__ == "__main__":
    main()
