"""``python -m tracking.reencrypt``: rewrite every stored secret of tracking (stack
components' secret fields and secrets' values) under the first of
``COMPONENT_SECRET_KEYS``, after a new key was put in front; the old key can be dropped
once this has run. Until then every key decrypts, so the service keeps answering while it
runs. Idempotent; each row is rewritten in its own short transaction, without touching
its ``updated`` time (the plaintext is unchanged)."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass

from shared.db import SessionMaker, create_engine, create_sessionmaker
from shared.secret_box import reencrypt_rows
from tracking.component.secrets import ComponentSecrets
from tracking.models import Secret, StackComponent
from tracking.secret.service import SecretCipher
from tracking.settings import Settings


@dataclass(frozen=True)
class Reencrypted:
    components: int
    secrets: int


async def reencrypt(
    sessionmaker: SessionMaker, components: ComponentSecrets, secrets: SecretCipher
) -> Reencrypted:
    """How many components and secrets were rewritten."""
    return Reencrypted(
        components=await reencrypt_rows(sessionmaker, StackComponent, components.rotate),
        secrets=await reencrypt_rows(sessionmaker, Secret, secrets.rotate),
    )


async def _main(settings: Settings) -> Reencrypted:
    engine = create_engine(settings.database_url)
    box = settings.secret_box()
    try:
        return await reencrypt(
            create_sessionmaker(engine), ComponentSecrets(box), SecretCipher(box)
        )
    finally:
        await engine.dispose()


def main() -> None:
    done = asyncio.run(_main(Settings()))
    print(  # noqa: T201
        f"re-encrypted the secrets of {done.components} stack components and the values "
        f"of {done.secrets} secrets under the first key"
    )
    sys.exit(0)


if __name__ == "__main__":
    main()
