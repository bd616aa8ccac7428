"""The identity service: users, logins, tokens and the platform's signing keys."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.routing import BaseRoute

from identity import (
    api_key,
    api_token,
    auth,
    device,
    server,
    server_settings,
    service_account,
    user,
)
from identity.api_key import endpoints as api_key_endpoints
from identity.api_token import endpoints as api_token_endpoints
from identity.auth import endpoints as auth_endpoints
from identity.auth.service import OwnKeySource, OwnServiceAuth, TokenService
from identity.device import endpoints as device_endpoints
from identity.server import endpoints as server_endpoints
from identity.server_settings import endpoints as server_settings_endpoints
from identity.server_settings.repository import ServerSettingsRepository
from identity.server_settings.service import TrackingOnboarding, UserActivity, initial_settings
from identity.service_account import endpoints as service_account_endpoints
from identity.settings import Settings
from identity.signing_key.service import KeyRing, SigningKeyService
from identity.state import IdentityState
from identity.user import endpoints as user_endpoints
from identity.user.service import UserService
from shared import passwords
from shared.app import LifespanHook, State, api_key_tokens, create_service_app
from shared.auth import TokenVerifier, TrackingScopeSource, WorkloadScopes
from shared.db import Clock, session_scope, take_turns, utcnow
from shared.passwords import announce_generated_password
from shared.settings import PLATFORM_VERSION
from shared.throttle import LoginThrottle

logger = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).parent / "migrations"

__all__ = [
    "api_key",
    "api_token",
    "auth",
    "create_app",
    "device",
    "server",
    "server_settings",
    "service_account",
    "user",
]


def _lifespan(clock: Clock) -> LifespanHook:
    @asynccontextmanager
    async def lifespan(_app: Starlette, state: State) -> AsyncIterator[State]:
        settings: Settings = state["settings"]
        async with session_scope(state["sessionmaker"]) as session:
            # Replicas starting together on an empty database: one creates the first admin.
            await take_turns(session, "identity:start-up")
            reencrypted = await SigningKeyService(session, settings, clock).reencrypt()
            await ServerSettingsRepository(session).ensure(initial_settings(settings, clock()))
            password = settings.default_admin_password
            generated = await UserService(session, clock=clock).ensure_default_admin(
                settings.default_admin_name, password.get_secret_value() if password else None
            )
        if reencrypted:
            logger.info(
                "signing keys re-encrypted under the first key", extra={"count": reencrypted}
            )
        if generated is not None:
            announce_generated_password("admin", settings.default_admin_name, generated)
        keyring = KeyRing(state["sessionmaker"], settings, clock)
        await keyring.load()
        verifier = TokenVerifier(
            keyring,
            issuer=settings.jwt_issuer,
            audience=settings.jwt_audience,
            leeway=settings.jwt_leeway.total_seconds(),
            clock=clock,
        )
        tokens = TokenService(settings, keyring, clock)
        own_auth = OwnServiceAuth(tokens)
        workload_scopes = WorkloadScopes(
            TrackingScopeSource(state["http"], settings.tracking_url, own_auth),
            ttl=settings.workload_scope_cache_ttl.total_seconds(),
        )
        onboarding = TrackingOnboarding(state["http"], settings.tracking_url, own_auth)
        refresher = asyncio.create_task(keyring.run(), name="signing-key-refresh")
        try:
            yield {
                "keyring": keyring,
                "verifier": verifier,
                "workload_scopes": workload_scopes,
                "onboarding": onboarding,
                "user_activity": UserActivity(state["sessionmaker"]),
                # ZENKEY_ bearers: identity logs in with the key itself.
                "api_key_tokens": api_key_tokens(
                    settings,
                    OwnKeySource(
                        state["sessionmaker"],
                        tokens,
                        state["revocations"],
                        LoginThrottle(state["redis"], state["keys"], settings),
                    ),
                ),
                "clock": clock,
            }
        finally:
            refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await refresher

    return lifespan


@functools.cache
def routes() -> tuple[BaseRoute, ...]:
    """The service's routes. They depend on no setting and hold no state, so they are
    built once a process and shared by its apps (the tests build an app per test)."""
    return (
        *server_endpoints.routes(),
        *server_settings_endpoints.routes(),
        *auth_endpoints.routes(),
        *device_endpoints.routes(),
        *api_token_endpoints.routes(),
        *user_endpoints.routes(),
        *service_account_endpoints.routes(),
        *api_key_endpoints.routes(),
    )


def create_app(
    settings: Settings | None = None,
    *,
    http_transport: httpx.AsyncBaseTransport | None = None,
    clock: Clock = utcnow,
) -> Starlette:
    """``clock`` is the service's notion of now (tests move it instead of sleeping)."""
    settings = settings or Settings()
    passwords.configure(settings)
    return create_service_app(
        settings,
        state_class=IdentityState,
        title="identity",
        version=PLATFORM_VERSION,
        description=(
            "Logins, devices, service accounts and their API keys, API tokens and the "
            "platform's signing keys."
        ),
        routes=routes(),
        migrations=MIGRATIONS,
        lifespan=_lifespan(clock),
        http_transport=http_transport,
    )
