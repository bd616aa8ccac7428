"""``python -m tracking.reencrypt``: rewrite every stored secret of tracking (stack
components' secret fields, secrets' values and service connectors' credentials) under the first of
``COMPONENT_SECRET_KEYS``, after a new key was put in front; the old key can be dropped
once this has run. Until then every key decrypts, so the service keeps answering while it
runs. Idempotent; each row is rewritten in its own short transaction, without touching
its ``updated`` time (the plaintext is unchanged)."""

from __future__ import annotations

import asyncio
import functools
import sys
from dataclasses import dataclass

from shared.db import SessionMaker, create_engine, create_sessionmaker
from shared.secret_box import reencrypt_rows
from tracking.component.secrets import ComponentSecrets
from tracking.models import Secret, ServiceConnector, StackComponent
from tracking.secret.service import SecretCipher
from tracking.service_connector.service import rotate
from tracking.settings import Settings


@dataclass(frozen=True)
class Reencrypted:
    components: int
    secrets: int
    connectors: int


async def reencrypt(
    sessionmaker: SessionMaker, components: ComponentSecrets, secrets: SecretCipher
) -> Reencrypted:
    """How many components, secrets and service connectors were rewritten."""
    return Reencrypted(
        components=await reencrypt_rows(sessionmaker, StackComponent, components.rotate),
        secrets=await reencrypt_rows(sessionmaker, Secret, secrets.rotate),
        connectors=await reencrypt_rows(
            sessionmaker, ServiceConnector, functools.partial(rotate, secrets)
        ),
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
        f"re-encrypted the secrets of {done.components} stack components, the values "
        f"of {done.secrets} secrets and the credentials of {done.connectors} service "
        "connectors under the first key"
    )
    sys.exit(0)


if __name__ == "__main__":
    main()
