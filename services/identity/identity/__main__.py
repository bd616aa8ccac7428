"""``python -m identity [--host H --port P]`` serves. Operator commands, run with the
service's settings (its environment):

- ``rotate-signing-key``: rotate the signing key (running replicas pick it up within
  seconds; tokens signed by the old key keep verifying for SIGNING_KEY_RETENTION).
- ``reset-password NAME [--password-stdin]``: NAME active again with a new password,
  generated and printed once (or read from standard input), its sessions ended and its
  login lockout lifted.
- ``make-admin NAME``: NAME an admin, and active if it has a password.

The last two recover a platform whose admins cannot log in: the API refuses to take the
last active admin away, but a password can be lost, or the database edited.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from redis.exceptions import RedisError
from sqlmodel.ext.asyncio.session import AsyncSession

from identity.app import MIGRATIONS
from identity.auth.service import password_subject
from identity.settings import Settings
from identity.signing_key.service import SigningKeyService
from identity.user.service import UserService
from shared import serve
from shared.auth import RevocationList
from shared.db import create_engine, create_sessionmaker, session_scope
from shared.errors import PlatformError
from shared.redis import Keys, create_redis
from shared.throttle import LoginThrottle

COMMANDS = ("rotate-signing-key", "reset-password", "make-admin")


@asynccontextmanager
async def _session(settings: Settings) -> AsyncIterator[AsyncSession]:
    """One transaction on identity's database, migrated to its head first."""
    from shared.migrations import upgrade  # alembic, for the commands only (not the server)

    engine = create_engine(settings.database_url)
    try:
        await upgrade(engine, MIGRATIONS, lock_name="identity-migrations")
        async with session_scope(create_sessionmaker(engine)) as session:
            yield session
    finally:
        await engine.dispose()


async def _rotate(settings: Settings) -> str:
    async with _session(settings) as session:
        key = await SigningKeyService(session, settings).rotate()
    return key.kid


async def _reset_password(settings: Settings, name: str, password: str | None) -> str:
    redis = create_redis(settings.redis_url)
    keys = Keys(settings.redis_namespace)
    # The account's sessions end on every service: the revocation list is in Redis.
    revocations = RevocationList(redis, keys)
    try:
        async with _session(settings) as session:
            user, generated = await UserService(session, revocations).reset_password(name, password)
            # It may log in at once, however many wrong passwords it was sent.
            await LoginThrottle(redis, keys, settings).clear(password_subject(user.name))
    finally:
        await revocations.aclose()
        await redis.aclose()
    if generated is not None:
        return f"'{name}' is active, with the new password: {generated}"
    return f"'{name}' is active, with the new password."


async def _make_admin(settings: Settings, name: str) -> str:
    async with _session(settings) as session:
        user = await UserService(session).make_admin(name)
    if user.active:
        return f"'{name}' is an active admin."
    return (
        f"'{name}' is an admin, not active: it has no password yet. Give it one with "
        f"`python -m identity reset-password {name}`."
    )


def _refusal(exc: PlatformError | RedisError) -> str:
    """Why a command changed nothing, in one line."""
    # The revocation list answers a Redis error as a 503 whose cause it is.
    unreachable = exc if isinstance(exc, RedisError) else exc.__cause__
    if isinstance(unreachable, RedisError | OSError):  # the transaction rolled back
        return f"Redis (REDIS_URL) cannot be reached, nothing was changed: {unreachable}"
    # An unknown name, a too short password.
    return exc.message if isinstance(exc, PlatformError) else str(exc)


def _command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m identity")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("rotate-signing-key", help="rotate the token signing key")
    reset = commands.add_parser(
        "reset-password", help="activate an account with a new password, ending its sessions"
    )
    reset.add_argument("name", help="the account's name or id")
    reset.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from standard input instead of generating one",
    )
    admin = commands.add_parser("make-admin", help="make an account an (active) admin")
    admin.add_argument("name", help="the account's name or id")
    args = parser.parse_args(argv)
    try:
        settings = Settings()
    except Exception as exc:  # a bad setting is a one-line message, not a traceback
        print(f"invalid settings: {exc}", file=sys.stderr)  # noqa: T201
        return 2
    try:
        if args.command == "rotate-signing-key":
            message = f"new signing key: {asyncio.run(_rotate(settings))}"
        elif args.command == "reset-password":
            password = sys.stdin.readline().rstrip("\r\n") if args.password_stdin else None
            message = asyncio.run(_reset_password(settings, args.name, password))
        else:
            message = asyncio.run(_make_admin(settings, args.name))
    except (PlatformError, RedisError) as exc:
        print(_refusal(exc), file=sys.stderr)  # noqa: T201
        return 1
    print(message)  # noqa: T201
    return 0


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] and args[0] in COMMANDS:
        raise SystemExit(_command(args))
    serve.main(
        app_factory="identity.app:create_app",
        settings_factory=Settings,
        default_port=8101,
        argv=args,
    )


if __name__ == "__main__":
    main()
