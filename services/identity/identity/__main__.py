"""``python -m identity [--host H --port P]`` serves; ``python -m identity
rotate-signing-key`` rotates the signing key (running replicas pick it up within
seconds; tokens signed by the old key keep verifying for SIGNING_KEY_RETENTION)."""

from __future__ import annotations

import asyncio
import sys

from identity.app import MIGRATIONS
from identity.settings import Settings
from identity.signing_key.service import SigningKeyService
from shared import serve
from shared.db import create_engine, create_sessionmaker, session_scope
from shared.migrations import upgrade


async def _rotate(settings: Settings) -> str:
    engine = create_engine(settings.database_url)
    try:
        await upgrade(engine, MIGRATIONS, lock_name="identity-migrations")
        async with session_scope(create_sessionmaker(engine)) as session:
            key = await SigningKeyService(session, settings).rotate()
        return key.kid
    finally:
        await engine.dispose()


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["rotate-signing-key"]:
        kid = asyncio.run(_rotate(Settings()))
        print(f"new signing key: {kid}")  # noqa: T201
        return
    serve.main(
        app_factory="identity.app:create_app",
        settings_factory=Settings,
        default_port=8101,
        argv=args,
    )


if __name__ == "__main__":
    main()
