"""An identity app per test, on a real database and Redis, with a known admin and a clock
the test moves."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr
from starlette.requests import Request
from starlette.responses import Response

from identity.app import create_app
from identity.settings import Settings
from shared.app import create_service_app
from shared.auth import require_principal
from shared.responses import render
from shared.routing import api_route
from shared.settings import ServiceSettings
from tests.support.asgi import LifespanApp, client_for, running

ADMIN = "default"
ADMIN_PASSWORD = "correct horse battery staple"
TRACKING_SECRET = "tracking-client-secret-0123456789abcdef"
WEBHOOKS_SECRET = "webhooks-client-secret-0123456789abcdef"


class Clock:
    """Identity's now; tests move it forward instead of waiting.

    Each reading is a microsecond after the last, as on a real clock: what happens after
    something else (a session opened after a password change, a user created after
    another) is also later.
    """

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(microseconds=1)
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def make_settings(database_url: str, redis_url: str, namespace: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "redis_url": redis_url,
        "redis_namespace": namespace,
        "signing_key_encryption_keys": SecretStr(Fernet.generate_key().decode()),
        "default_admin_password": SecretStr(ADMIN_PASSWORD),
        "service_clients": {"tracking": SecretStr(TRACKING_SECRET)},
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
    """``database_url`` is at identity's head."""
    return "identity"


@pytest.fixture
def identity_settings(database_url: str, redis_url: str, redis_namespace: str) -> Settings:
    return make_settings(database_url, redis_url, redis_namespace)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def identity_app(identity_settings: Settings, clock: Clock) -> AsyncIterator[LifespanApp]:
    async with running(create_app(identity_settings, clock=clock)) as app:
        yield app


@pytest.fixture
async def identity(identity_app: LifespanApp) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=identity_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


Login = Callable[..., Awaitable[str]]


@pytest.fixture
def login(identity: httpx.AsyncClient) -> Login:
    async def _login(username: str = ADMIN, password: str = ADMIN_PASSWORD) -> str:
        response = await identity.post(
            "/api/v1/login", data={"username": username, "password": password}
        )
        assert response.status_code == 200, response.text
        # The login set the session cookie; tests choose their credential explicitly.
        identity.cookies.clear()
        token: str = response.json()["access_token"]
        return token

    return _login


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def tracking_service_token(identity: httpx.AsyncClient) -> str:
    """The token identity's client-credentials grant gives the tracking service."""
    response = await identity.post(
        "/api/v1/login",
        data={
            "grant_type": "client_credentials",
            "client_id": "tracking",
            "client_secret": TRACKING_SECRET,
        },
    )
    assert response.status_code == 200, response.text
    token: str = response.json()["access_token"]
    return token


async def _whoami(request: Request) -> Response:
    return render({"sub": require_principal(request).token.subject})


@pytest.fixture
async def other_service(
    identity_app: LifespanApp, database_url: str, redis_url: str, redis_namespace: str
) -> AsyncIterator[httpx.AsyncClient]:
    """A second service that knows identity only through its JWKS over HTTP and shares
    its Redis (the revocation list). It refetches the JWKS on every unknown kid: its
    refetch limit runs on real time, which identity's clock does not move."""
    settings = ServiceSettings(
        database_url=database_url,
        redis_url=redis_url,
        redis_namespace=redis_namespace,
        jwks_url="http://identity/.well-known/jwks.json",
        jwks_min_refresh_interval=timedelta(0),
        service_name="other",
    )
    app = create_service_app(
        settings,
        title="other",
        version="0",
        routes=[api_route("/whoami", _whoami, method="GET", summary="Who am I")],
        migrations=None,
        http_transport=httpx.ASGITransport(app=identity_app),
    )
    async with client_for(app) as client:
        yield client
