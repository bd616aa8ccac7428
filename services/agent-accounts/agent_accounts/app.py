"""The agent-accounts service: accounts, API keys, workers and task tokens of the agent-run
server (wire-compatible with kitaru 0.27.2), its own trust domain."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.routing import BaseRoute

from agent_accounts.account import endpoints as account_endpoints
from agent_accounts.account.service import AccountService
from agent_accounts.api_key import endpoints as api_key_endpoints
from agent_accounts.core.auth import AgentAuthBackend
from agent_accounts.core.keys import load_keys
from agent_accounts.core.tokens import ALL_KINDS, TokenIssuer
from agent_accounts.device import endpoints as device_endpoints
from agent_accounts.login import endpoints as login_endpoints
from agent_accounts.server import endpoints as server_endpoints
from agent_accounts.server.endpoints import AGENT_SERVER_VERSION
from agent_accounts.settings import Settings
from agent_accounts.state import AgentState
from agent_accounts.task import endpoints as task_endpoints
from agent_accounts.worker import endpoints as worker_endpoints
from shared import passwords
from shared.app import LifespanHook, State, create_service_app
from shared.auth import TokenVerifier
from shared.db import Clock, session_scope, take_turns, utcnow
from shared.passwords import announce_generated_password

MIGRATIONS = Path(__file__).parent / "migrations"

__all__ = ["AGENT_SERVER_VERSION", "create_app"]


def _lifespan(clock: Clock) -> LifespanHook:
    @asynccontextmanager
    async def lifespan(_app: Starlette, state: State) -> AsyncIterator[State]:
        settings: Settings = state["settings"]
        signer, keys = load_keys(
            settings.jwt_signing_keys.get_secret_value(), issuer=settings.jwt_issuer
        )
        verifier = TokenVerifier(
            keys,
            issuer=settings.jwt_issuer,
            audience=settings.jwt_audience,
            leeway=settings.jwt_leeway.total_seconds(),
            kinds_without_exp=(),
        )
        password = settings.server_default_account_password
        async with session_scope(state["sessionmaker"]) as session:
            # Replicas starting together on an empty database: one creates the account.
            await take_turns(session, "agent-accounts:start-up")
            default, generated = await AccountService(session, settings, clock).ensure_default(
                settings.server_default_account_name,
                password.get_secret_value() if password else None,
            )
        if generated is not None:
            announce_generated_password("admin", settings.server_default_account_name, generated)
        yield {
            "verifier": verifier,
            "issuer": TokenIssuer(signer, settings, clock),
            "clock": clock,
            "default_account_id": default.id,
        }

    return lifespan


@functools.cache
def routes() -> tuple[BaseRoute, ...]:
    """The service's routes. They depend on no setting and hold no state, so they are
    built once a process and shared by its apps (the tests build an app per test)."""
    return (
        *server_endpoints.routes(),
        *login_endpoints.routes(),
        *device_endpoints.routes(),
        *account_endpoints.routes(),
        *api_key_endpoints.routes(),
        *worker_endpoints.routes(),
        *task_endpoints.routes(),
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
        state_class=AgentState,
        title="agent-accounts",
        version=AGENT_SERVER_VERSION,
        description="Accounts, API keys, workers and task tokens of the agent-run server.",
        routes=routes(),
        migrations=MIGRATIONS,
        lifespan=_lifespan(clock),
        token_kinds=ALL_KINDS,
        http_transport=http_transport,
        auth_backend=AgentAuthBackend(),
        error_style="message",
        idempotency_cipher=settings.secret_cipher(),
    )
