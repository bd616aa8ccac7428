"""An agent-accounts app per test on a real database and Redis, a clock the test moves,
and helpers to log in and mint credentials."""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr
from sqlalchemy import Row, text
from sqlalchemy.ext.asyncio import create_async_engine

from agent_accounts.app import create_app
from agent_accounts.settings import Settings
from shared.redis import create_redis
from tests.support.asgi import running

ADMIN = "default"
ADMIN_PASSWORD = "correct horse battery staple"


class Clock:
    """The service's now; tests move it forward instead of sleeping."""

    def __init__(self) -> None:
        self.now = dt.datetime.now(dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += dt.timedelta(**delta)


def make_settings(database_url: str, redis_url: str, namespace: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "redis_url": redis_url,
        "redis_namespace": namespace,
        "jwt_signing_keys": SecretStr(secrets.token_urlsafe(32)),
        "server_secret_encryption_key": SecretStr(Fernet.generate_key().decode()),
        "server_default_account_password": SecretStr(ADMIN_PASSWORD),
        "environment": "test",
        "log_json": False,
        # argon2's least cost: a hash in ~0.1 ms instead of ~35 (OWASP's, the default, is
        # checked in tests/identity/user/test_endpoints.py).
        "password_hash_memory_kib": 8,
        "password_hash_iterations": 1,
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def database_service() -> str:
    """``database_url`` is at agent_accounts's head."""
    return "agent_accounts"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {}


@pytest.fixture
def agent_settings(
    database_url: str, redis_url: str, redis_namespace: str, settings_overrides: dict[str, Any]
) -> Settings:
    return make_settings(database_url, redis_url, redis_namespace, **settings_overrides)


@pytest.fixture
async def client(agent_settings: Settings, clock: Clock) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        running(create_app(agent_settings, clock=clock)) as app,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://testserver"
        ) as client,
    ):
        yield client


async def stored_rows(settings: Settings, sql: str) -> list[Row[Any]]:
    """What the service's database holds (read on a connection of its own)."""
    engine = create_async_engine(settings.database_url)
    try:
        async with engine.connect() as conn:
            return list((await conn.execute(text(sql))).all())
    finally:
        await engine.dispose()


async def idempotency_records(settings: Settings) -> list[bytes]:
    """The raw idempotency records the service keeps in Redis."""
    redis = create_redis(settings.redis_url)
    try:
        pattern = f"{settings.redis_namespace}:idempotency:*"
        return [await redis.get(k) async for k in redis.scan_iter(match=pattern)]
    finally:
        await redis.aclose()


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


Login = Callable[..., Awaitable[str]]


@pytest.fixture
def login(client: httpx.AsyncClient) -> Login:
    async def _login(username: str = ADMIN, password: str = ADMIN_PASSWORD) -> str:
        response = await client.post(
            "/api/v1/login",
            data={"grant_type": "password", "username": username, "password": password},
        )
        assert response.status_code == 200, response.text
        token: str = response.json()["access_token"]
        return token

    return _login


@pytest.fixture
async def admin(login: Login) -> dict[str, str]:
    """Headers of the default admin's session."""
    return bearer(await login())


NewUser = Callable[..., Awaitable[tuple[dict[str, Any], dict[str, str]]]]


@pytest.fixture
def new_user(client: httpx.AsyncClient, admin: dict[str, str], login: Login) -> NewUser:
    """A user created by the admin, and its session headers."""

    async def _new_user(
        name: str | None = None, *, is_admin: bool = False
    ) -> tuple[dict[str, Any], dict[str, str]]:
        name = name or f"user-{secrets.token_hex(4)}"
        password = f"pw-{secrets.token_hex(8)}"
        response = await client.post(
            "/api/v1/users",
            json={"name": name, "password": password, "is_admin": is_admin},
            headers=admin,
        )
        assert response.status_code == 201, response.text
        return response.json(), bearer(await login(name, password))

    return _new_user


NewKey = Callable[..., Awaitable[dict[str, Any]]]


@pytest.fixture
def new_key(client: httpx.AsyncClient, admin: dict[str, str]) -> NewKey:
    """An API key issued to ``headers``'s account (the admin's by default)."""

    async def _new_key(
        headers: dict[str, str] | None = None, name: str | None = None
    ) -> dict[str, Any]:
        response = await client.post(
            "/api/v1/api-keys",
            json={"name": name or f"key-{secrets.token_hex(4)}"},
            headers=headers or admin,
        )
        assert response.status_code == 201, response.text
        body: dict[str, Any] = response.json()
        return body

    return _new_key


WORKER_SCOPE = {"claims": [{"kind": "evaluator"}]}


async def register_worker(
    client: httpx.AsyncClient, key: str, name: str = "w", **headers: str
) -> dict[str, Any]:
    """``POST /workers`` with ``key``: the registration answer (token and worker)."""
    body = {"name": name, "scope": WORKER_SCOPE, "runtime": {"platform": "bare"}}
    response = await client.post("/api/v1/workers", json=body, headers={**bearer(key), **headers})
    assert response.status_code == 200, response.text
    registered: dict[str, Any] = response.json()
    return registered


ME = "/api/v1/accounts/me"


async def change_password(
    client: httpx.AsyncClient, account: dict[str, Any], headers: dict[str, str], old: str
) -> None:
    """The account changes its own password (from ``old``) to ``a-brand-new-password``."""
    response = await client.patch(
        f"/api/v1/users/{account['id']}",
        json={"password": "a-brand-new-password", "old_password": old},
        headers=headers,
    )
    assert response.status_code == 200, response.text


async def new_user_with_password(
    client: httpx.AsyncClient, admin: dict[str, str], name: str
) -> tuple[dict[str, Any], str]:
    """A user the admin creates with a password: the account and its password."""
    password = f"{name}-first-password"
    response = await client.post(
        "/api/v1/users", json={"name": name, "password": password}, headers=admin
    )
    assert response.status_code == 201, response.text
    return response.json(), password
