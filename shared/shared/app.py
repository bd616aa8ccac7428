"""The service application factory every service builds its ``create_app`` on.

It assembles the same middleware, error handlers, health routes, OpenAPI document and
lifespan for each service, so a service only contributes its routes, its migrations and
(optionally) a lifespan hook of its own::

    def create_app(settings: Settings | None = None) -> Starlette:
        settings = settings or Settings()
        return create_service_app(
            settings, title="tracking", version=PLATFORM_VERSION,
            routes=routes(), migrations=MIGRATIONS,
        )

The lifespan yields, as request state: ``settings``, ``engine``, ``sessionmaker``,
``redis``, ``keys`` (Redis key builder), ``http`` (httpx client), ``verifier``,
``revocations``, ``workload_scopes`` (see :mod:`shared.auth.workload`),
``api_key_tokens`` (see :mod:`shared.auth.api_keys`), plus whatever the service's own
hook yields.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from cryptography.fernet import MultiFernet
from starlette.applications import Starlette
from starlette.authentication import AuthenticationBackend
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.types import ASGIApp, Scope

from shared.auth import (
    APIKeySource,
    APIKeyTokens,
    AuthMiddleware,
    ExchangeLimit,
    IdentityKeySource,
    JWKSClient,
    JWTAuthBackend,
    RevocationList,
    TokenKind,
    TokenVerifier,
    TrackingScopeSource,
    WorkloadScopes,
)
from shared.db import create_engine, create_sessionmaker
from shared.errors import NO_SUCH_ENDPOINT, NotFound, PlatformError
from shared.health import health_routes
from shared.http import create_http_client, service_auth
from shared.idempotency import IdempotencyMiddleware
from shared.metrics import MetricsMiddleware
from shared.middleware import ServiceMiddleware, current_request_id
from shared.openapi import build_openapi
from shared.redis import Keys, create_redis
from shared.redis_pipe import close_pipe_of
from shared.responses import ErrorStyle, error_response, error_style_var
from shared.revisions import migrate
from shared.routing import literal_segments_first
from shared.settings import ServiceSettings
from shared.state import STATE_KEY, ServiceState

__all__ = ["LifespanHook", "ServiceApp", "State", "api_key_tokens", "create_service_app"]

State = dict[str, Any]
LifespanHook = Callable[[Starlette, State], AbstractAsyncContextManager[State]]

# Tokens every platform endpoint accepts unless a route narrows it with require_principal.
PLATFORM_TOKEN_KINDS: tuple[str, ...] = (
    TokenKind.ACCESS,
    TokenKind.DEVICE,
    TokenKind.GENERIC,
    TokenKind.WORKLOAD,
    TokenKind.SERVICE,
)


async def _platform_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, PlatformError)
    return error_response(exc, current_request_id())


def _allowed_methods(routes: Sequence[BaseRoute], scope: Scope) -> set[str]:
    """Every method some route serves at the scope's path."""
    methods: set[str] = set()
    for route in routes:
        if isinstance(route, Mount):
            match, child_scope = route.matches(scope)
            if match is not Match.NONE:
                methods |= _allowed_methods(route.routes, {**scope, **child_scope})
        elif (
            isinstance(route, Route) and route.methods and route.matches(scope)[0] is not Match.NONE
        ):
            methods |= route.methods
    return methods


async def _http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own 404 (no route) in the service's error style (the agent server's is
    kitaru's ``{"detail": "Not Found"}``); its 405 keeps the reference's
    ``{"detail": "Method Not Allowed"}``."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        message = NO_SUCH_ENDPOINT if error_style_var.get() == "platform" else str(exc.detail)
        return error_response(NotFound(message), current_request_id())
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        # Starlette's Allow lists only the first route matching the path, but api_route
        # declares one route per method: collect them all (from the top, since a mount
        # has already rewritten root_path in this scope).
        scope = request.scope
        top = {**scope, "root_path": scope.get("app_root_path", scope.get("root_path", ""))}
        allowed = _allowed_methods(request.app.routes, top)
        if allowed:
            headers["Allow"] = ", ".join(sorted(allowed))
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)


def _workload_scopes(
    settings: ServiceSettings, http: httpx.AsyncClient, auth: httpx.Auth | None
) -> WorkloadScopes | None:
    """Workload tokens checked with tracking, as this service; ``None`` (workload tokens
    refused) without service credentials. Tracking and identity replace it."""
    if auth is None:
        return None
    return WorkloadScopes(
        TrackingScopeSource(http, settings.tracking_url, auth),
        ttl=settings.workload_scope_cache_ttl.total_seconds(),
    )


def api_key_tokens(settings: ServiceSettings, source: APIKeySource) -> APIKeyTokens:
    """``ZENKEY_`` bearers exchanged with ``source``, remembered and limited as
    ``settings`` say."""
    return APIKeyTokens(
        source,
        refusal_ttl=settings.api_key_refusal_memory.total_seconds(),
        limit=ExchangeLimit(settings.api_key_exchanges_per_minute),
    )


def _api_key_tokens(
    settings: ServiceSettings, http: httpx.AsyncClient, auth: httpx.Auth | None
) -> APIKeyTokens | None:
    """``ZENKEY_`` bearers exchanged at identity, as this service; ``None`` (API keys
    refused) without service credentials. Identity replaces it."""
    if auth is None:
        return None
    return api_key_tokens(settings, IdentityKeySource(http, settings.identity_url, auth))


@asynccontextmanager
async def _base_state(
    settings: ServiceSettings,
    migrations: Path | None,
    http_transport: httpx.AsyncBaseTransport | None,
) -> AsyncIterator[State]:
    engine = create_engine(
        settings.database_url, pool_size=settings.database_pool_size, echo=settings.database_echo
    )
    redis = create_redis(settings.redis_url)
    http = create_http_client(settings, transport=http_transport)
    keys = Keys(settings.redis_namespace)
    revocations = RevocationList(redis, keys)
    # One service token for every call this service makes as itself.
    auth = service_auth(settings, http)
    try:
        if migrations is not None and settings.run_migrations:
            await migrate(
                engine,
                settings.database_url,
                migrations,
                lock_name=f"{settings.service_name}-migrations",
                log_level=settings.log_level,
                log_json=settings.log_json,
            )
        jwks = JWKSClient(
            http,
            settings.jwks_url,
            ttl=settings.jwks_cache_ttl.total_seconds(),
            min_refresh_interval=settings.jwks_min_refresh_interval.total_seconds(),
        )
        yield {
            "settings": settings,
            "engine": engine,
            "sessionmaker": create_sessionmaker(engine),
            "redis": redis,
            "keys": keys,
            "http": http,
            "verifier": TokenVerifier(
                jwks,
                issuer=settings.jwt_issuer,
                audience=settings.jwt_audience,
                leeway=settings.jwt_leeway.total_seconds(),
            ),
            "revocations": revocations,
            "workload_scopes": _workload_scopes(settings, http, auth),
            "api_key_tokens": _api_key_tokens(settings, http, auth),
        }
    finally:
        await http.aclose()
        await revocations.aclose()
        await close_pipe_of(redis)  # idempotency's connection
        await redis.aclose()
        await engine.dispose()


class ServiceApp(Starlette):
    """Starlette, with an optional ``front``: an ASGI app wrapped around the whole
    middleware stack, Starlette's own error middleware included, for the few requests a
    service answers on a short path of its own (the webhook intake); everything else goes
    on to the stack it wraps. ``front = None`` before the first request takes it away."""

    front: Callable[[ASGIApp], ASGIApp] | None = None
    openapi_document: Callable[[], dict[str, Any]]
    """The service's OpenAPI document, as ``/openapi.json`` serves it, without a request
    or the lifespan (the gateway's merged documents are built from it, offline)."""

    def build_middleware_stack(self) -> ASGIApp:
        stack = super().build_middleware_stack()
        return stack if self.front is None else self.front(stack)


def create_service_app(
    settings: ServiceSettings,
    *,
    title: str,
    version: str,
    routes: Sequence[BaseRoute],
    migrations: Path | None,
    lifespan: LifespanHook | None = None,
    token_kinds: Collection[str] = PLATFORM_TOKEN_KINDS,
    http_transport: httpx.AsyncBaseTransport | None = None,
    description: str = "",
    auth_backend: AuthenticationBackend | None = None,
    error_style: ErrorStyle = "platform",
    idempotency_cipher: MultiFernet | None = None,
    front: Callable[[ASGIApp], ASGIApp] | None = None,
    state_class: type[ServiceState] | None = None,
) -> ServiceApp:
    """Build a service: its routes plus health, ``/openapi.json``, middleware, errors.

    ``auth_backend`` replaces the platform's JWT backend (``token_kinds`` is then unused)
    for a service with credentials of its own; the idempotency middleware keys records by
    whatever authenticated user it yields. ``error_style`` picks the errors' wire shape
    (see :data:`shared.responses.error_style_var`). ``idempotency_cipher`` lets the
    idempotency middleware keep secret-carrying (``no-store``) answers encrypted for
    replay (see :mod:`shared.idempotency`); without it they are not kept. ``front`` wraps
    the whole stack (see :class:`ServiceApp`). ``state_class`` is the service's typed
    request state (:mod:`shared.state`), built from the lifespan's state when it starts.
    """
    all_routes = literal_segments_first([*health_routes(), *routes])
    documented = list(all_routes)
    built: list[dict[str, Any]] = []

    def openapi_document() -> dict[str, Any]:
        # Built at the first use, not with the app: it costs a tenth of a second
        # (pydantic's JSON schemas of every model), which every app built in a test
        # would pay for nothing. Its tests build it for every service.
        if not built:
            built.append(
                build_openapi(documented, title=title, version=version, description=description)
            )
        return built[0]

    async def openapi(_request: Request) -> Response:
        return JSONResponse(openapi_document())

    all_routes.append(Route("/openapi.json", openapi, include_in_schema=False))

    def typed(state: State) -> State:
        if state_class is None:
            return state
        return {**state, STATE_KEY: state_class.from_lifespan(state)}

    @asynccontextmanager
    async def app_lifespan(app: Starlette) -> AsyncIterator[State]:
        async with _base_state(settings, migrations, http_transport) as state:
            if lifespan is None:
                yield typed(state)
                return
            async with lifespan(app, state) as extra:
                yield typed({**state, **extra})

    backend = auth_backend or JWTAuthBackend(
        cookie_name=settings.session_cookie_name, kinds=token_kinds
    )
    middleware = [
        Middleware(MetricsMiddleware),
        Middleware(
            ServiceMiddleware,
            server_header=str(settings.server_id),
            max_body_size=settings.max_body_size,
            error_style=error_style,
        ),
        Middleware(AuthMiddleware, backend=backend, on_error=lambda conn, exc: _auth_error(exc)),
        Middleware(IdempotencyMiddleware, cipher=idempotency_cipher),
    ]
    app = ServiceApp(
        routes=all_routes,
        middleware=middleware,
        exception_handlers={PlatformError: _platform_error, HTTPException: _http_exception},
        lifespan=app_lifespan,
    )
    app.front = front
    app.openapi_document = openapi_document
    return app


def _auth_error(exc: Exception) -> Response:
    # AuthMiddleware calls this only for Starlette's AuthenticationError, which our backend
    # never raises (a bad token becomes RefusedCaller). ServiceUnavailable from the
    # revocation check (Redis down: fail closed) escapes the middleware and is rendered
    # as a 503 by ServiceMiddleware.
    return error_response(PlatformError(f"Authentication failed: {exc}"), current_request_id())
