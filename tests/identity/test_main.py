"""The operator's commands that recover lost admins, run as an operator runs them: a
process of their own on identity's database and Redis, beside a running identity."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass

import httpx
import pytest
from sqlalchemy import text

from identity.auth.service import password_subject
from identity.settings import Settings
from shared.throttle import LoginThrottle
from tests.identity.conftest import ADMIN, ADMIN_PASSWORD, Login, bearer
from tests.support.asgi import LifespanApp
from tests.support.redis_server import free_port


@dataclass(frozen=True)
class Done:
    code: int
    out: str
    err: str


async def run_identity(settings: Settings, *args: str, stdin: str = "") -> Done:
    """``python -m identity <args>`` with ``settings`` as its environment."""
    env = {
        **os.environ,
        "DATABASE_URL": settings.database_url,
        "REDIS_URL": settings.redis_url,
        "REDIS_NAMESPACE": settings.redis_namespace,
        "SIGNING_KEY_ENCRYPTION_KEYS": settings.signing_key_encryption_keys.get_secret_value(),
    }
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "identity",
        *args,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(child.communicate(stdin.encode()), timeout=60)
    assert child.returncode is not None
    return Done(child.returncode, out.decode(), err.decode())


async def log_in(identity: httpx.AsyncClient, name: str, password: str) -> httpx.Response:
    response = await identity.post("/api/v1/login", data={"username": name, "password": password})
    identity.cookies.clear()
    return response


async def sql(app: LifespanApp, statement: str, **params: object) -> None:
    async with app.state["engine"].begin() as connection:
        await connection.execute(text(statement), params)


async def test_reset_password_prints_a_new_one_once_and_ends_the_sessions(
    identity: httpx.AsyncClient, identity_settings: Settings, login: Login
):
    session = await login()

    done = await run_identity(identity_settings, "reset-password", ADMIN)

    assert done.code == 0, done.err
    prefix = f"'{ADMIN}' is active, with the new password: "
    assert done.out.startswith(prefix)
    password = done.out.removeprefix(prefix).strip()
    assert (await log_in(identity, ADMIN, password)).status_code == 200
    assert (await log_in(identity, ADMIN, ADMIN_PASSWORD)).status_code == 401
    me = await identity.get("/api/v1/current-user", headers=bearer(session))
    assert me.status_code == 401


async def test_reset_password_reactivates_and_may_read_the_password_from_stdin(
    identity: httpx.AsyncClient, identity_settings: Settings, identity_app: LifespanApp
):
    await sql(identity_app, "UPDATE users SET active = false WHERE name = :name", name=ADMIN)
    assert (await log_in(identity, ADMIN, ADMIN_PASSWORD)).status_code == 401

    chosen = "a password the operator chose"
    done = await run_identity(
        identity_settings, "reset-password", ADMIN, "--password-stdin", stdin=chosen + "\n"
    )

    assert done.code == 0, done.err
    assert done.out == f"'{ADMIN}' is active, with the new password.\n"
    assert chosen not in done.out + done.err
    assert (await log_in(identity, ADMIN, chosen)).status_code == 200


async def test_reset_password_lifts_the_accounts_login_lockout(
    identity: httpx.AsyncClient, identity_settings: Settings, identity_app: LifespanApp
):
    # Locked until its failures are forgotten (24 h): the ceiling, reached by guesses
    # from many addresses.
    throttle = LoginThrottle(
        identity_app.state["redis"], identity_app.state["keys"], identity_settings
    )
    for index in range(identity_settings.login_account_failure_ceiling):
        await throttle.failed(password_subject(ADMIN), f"192.0.2.{index}")
    assert (await log_in(identity, ADMIN, ADMIN_PASSWORD)).status_code == 429

    chosen = "the operator's new password"
    done = await run_identity(
        identity_settings, "reset-password", ADMIN, "--password-stdin", stdin=chosen + "\n"
    )

    assert done.code == 0, done.err
    assert (await log_in(identity, ADMIN, chosen)).status_code == 200


async def test_reset_password_without_redis_says_so_at_once_and_changes_nothing(
    identity: httpx.AsyncClient, identity_settings: Settings
):
    unreachable = identity_settings.model_copy(
        update={"redis_url": f"redis://127.0.0.1:{free_port()}/0"}
    )

    async def timed(settings: Settings, *args: str) -> tuple[Done, float]:
        started = time.monotonic()
        done = await run_identity(settings, *args)
        return done, time.monotonic() - started

    # Beside it, under the same load, the same command that its first query refuses (no
    # such account): the same start-up, and nothing to wait for.
    (done, took), (refused, refused_took) = await asyncio.gather(
        timed(unreachable, "reset-password", ADMIN),
        timed(identity_settings, "reset-password", "nobody"),
    )

    assert (refused.code, refused.out) == (1, ""), refused.err
    assert took < refused_took + 5, "it waited for Redis"
    assert done.code == 1
    assert "Redis (REDIS_URL) cannot be reached" in done.err
    assert "Traceback" not in done.err
    assert done.out == ""
    assert (await log_in(identity, ADMIN, ADMIN_PASSWORD)).status_code == 200


async def test_make_admin_gives_the_platform_an_admin_again(
    identity: httpx.AsyncClient,
    identity_settings: Settings,
    identity_app: LifespanApp,
    login: Login,
):
    created = await identity.post(
        "/api/v1/users",
        json={"name": "alice", "is_admin": False, "password": "alice password 1", "active": True},
        headers=bearer(await login()),
    )
    assert created.status_code == 200
    # How a platform loses its admins despite the API: an edit of the database.
    await sql(identity_app, "UPDATE users SET active = false WHERE is_admin")

    done = await run_identity(identity_settings, "make-admin", "alice")

    assert done.code == 0, done.err
    assert done.out == "'alice' is an active admin.\n"
    alice = (await log_in(identity, "alice", "alice password 1")).json()["access_token"]
    listed = await identity.get("/api/v1/users", headers=bearer(alice))
    assert listed.status_code == 200


async def test_make_admin_of_an_account_without_a_password_says_what_to_do(
    identity: httpx.AsyncClient, identity_settings: Settings, login: Login
):
    created = await identity.post(
        "/api/v1/users", json={"name": "bob", "is_admin": False}, headers=bearer(await login())
    )
    assert created.status_code == 200

    done = await run_identity(identity_settings, "make-admin", "bob")

    assert done.code == 0, done.err
    assert "not active: it has no password yet" in done.out
    assert "python -m identity reset-password bob" in done.out


@pytest.mark.parametrize(
    ("args", "stdin", "error"),
    [
        (("make-admin", "nobody"), "", "No user with this name or ID found"),
        (("reset-password", "nobody"), "", "No user with this name or ID found"),
        (("reset-password", ADMIN, "--password-stdin"), "short\n", "at least 8 characters"),
    ],
)
async def test_refused_commands_exit_1_with_the_reason_and_change_nothing(
    identity: httpx.AsyncClient,
    identity_settings: Settings,
    args: tuple[str, ...],
    stdin: str,
    error: str,
):
    done = await run_identity(identity_settings, *args, stdin=stdin)

    assert done.code == 1
    assert error in done.err
    assert "Traceback" not in done.err
    assert done.out == ""
    assert (await log_in(identity, ADMIN, ADMIN_PASSWORD)).status_code == 200
