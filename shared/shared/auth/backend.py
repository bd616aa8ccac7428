"""Starlette authentication from the session cookie or a bearer token.

Install with ``Middleware(AuthMiddleware, backend=JWTAuthBackend(...))`` (or Starlette's
``AuthenticationMiddleware``, which it stands in for). The backend never refuses a
request: it records who the caller is (a :class:`Principal`), that the credentials were
bad (:class:`RefusedCaller`), or nobody (Starlette's ``UnauthenticatedUser``).
Handlers that need a caller ask with :func:`require_principal` or :func:`require_admin`,
so routes such as ``/login`` keep working with a stale cookie.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, Protocol
from uuid import UUID

from starlette.authentication import (
    AuthCredentials,
    AuthenticationBackend,
    AuthenticationError,
    BaseUser,
    UnauthenticatedUser,
)
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, cookie_parser
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from shared.auth.api_keys import API_KEY_PREFIX, APIKeyRefused, APIKeyTokens
from shared.auth.revocation import RevocationList
from shared.auth.tokens import TokenKind, VerifiedToken
from shared.auth.verifier import InvalidToken, TokenVerifier
from shared.auth.workload import WorkloadScopes
from shared.errors import AuthorizationFailed, Forbidden, HTTPDetailError, Unauthorized
from shared.metrics import TOKEN_VERIFICATIONS

__all__ = [
    "AuthMiddleware",
    "JWTAuthBackend",
    "Principal",
    "RefusedCaller",
    "ScopeAuthenticationBackend",
    "bearer_token",
    "ensure_admin",
    "require_admin",
    "require_kind",
    "require_principal",
]


class Principal(BaseUser):
    """An authenticated caller: a verified, unrevoked token."""

    def __init__(self, token: VerifiedToken) -> None:
        self.token = token

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.token.name or self.token.subject

    @property
    def identity(self) -> str:
        """The token's subject."""
        return self.token.subject

    @property
    def user_id(self) -> UUID | None:
        """The subject as a UUID (``None`` for non-user subjects such as services)."""
        return self.token.user_id

    @property
    def is_admin(self) -> bool:
        return self.token.is_admin

    @property
    def kind(self) -> str:
        return self.token.kind


class RefusedCaller(BaseUser):
    """A caller that presented a token which was refused; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    @property
    def is_authenticated(self) -> bool:
        return False

    @property
    def display_name(self) -> str:
        return ""

    @property
    def identity(self) -> str:
        return ""


AuthResult = tuple[AuthCredentials, BaseUser]

REVOKED = "token has been revoked"


def bearer_token(conn: HTTPConnection) -> str | None:
    """The credential of an ``Authorization: Bearer`` header, if any."""
    return _bearer(conn.headers.get("authorization", ""))


def _bearer(authorization: str) -> str | None:
    scheme, _, credentials = authorization.partition(" ")
    credentials = credentials.strip()
    if scheme.lower() != "bearer" or not credentials:
        return None
    return credentials


class ScopeAuthenticationBackend(AuthenticationBackend):
    """A backend that reads what it needs from the ASGI scope itself, so that
    :class:`AuthMiddleware` builds no Starlette connection (and its header, cookie and
    state wrappers) for it; :meth:`authenticate` still takes one."""

    async def authenticate(self, conn: HTTPConnection) -> AuthResult | None:
        return await self.authenticate_scope(conn.scope)

    async def authenticate_scope(self, scope: Scope) -> AuthResult | None:
        """What :meth:`authenticate` answers for a connection over ``scope``."""
        raise NotImplementedError


class AuthMiddleware:
    """Starlette's ``AuthenticationMiddleware``, doing the same (``scope["auth"]`` and
    ``scope["user"]`` from ``backend``, anonymous without credentials, ``on_error`` for an
    ``AuthenticationError``) with less work per request: a
    :class:`ScopeAuthenticationBackend` is handed the scope, and a connection object is
    only built for other backends or an error."""

    def __init__(
        self,
        app: ASGIApp,
        backend: AuthenticationBackend,
        on_error: Callable[[HTTPConnection, AuthenticationError], Response] | None = None,
    ) -> None:
        self.app = app
        self.backend = backend
        self.on_error = on_error or AuthenticationMiddleware.default_on_error
        self._from_scope = (
            backend.authenticate_scope if isinstance(backend, ScopeAuthenticationBackend) else None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http" and kind != "websocket":
            await self.app(scope, receive, send)
            return
        try:
            if self._from_scope is not None:
                result = await self._from_scope(scope)
            else:
                result = await self.backend.authenticate(HTTPConnection(scope))
        except AuthenticationError as exc:
            response = self.on_error(HTTPConnection(scope), exc)
            if kind == "websocket":
                await send({"type": "websocket.close", "code": 1000})
            else:
                await response(scope, receive, send)
            return
        if result is None:
            result = AuthCredentials(), UnauthenticatedUser()
        scope["auth"], scope["user"] = result
        await self.app(scope, receive, send)


class JWTAuthBackend(ScopeAuthenticationBackend):
    """Authenticates with the cookie ``cookie_name`` or, without one, a bearer token.

    The cookie wins when both are present, as in the reference server. Only tokens of
    ``kinds`` are accepted. The verifier and the revocation list are read from the
    request state (``state.verifier``, and ``state.revocations`` if the service checks
    revocation), because the app's lifespan creates them.

    A workload token is also checked against its object (``state.workload_scopes``, a
    :class:`~shared.auth.workload.WorkloadScopes`; without one, workload tokens are
    refused).

    A ``ZENKEY_`` API key in their place is exchanged for the token of a login with it
    (``state.api_key_tokens``, a :class:`~shared.auth.api_keys.APIKeyTokens`; without
    one, API keys are refused), see :mod:`shared.auth.api_keys`.

    Never raises for a bad token; only :class:`~shared.errors.ServiceUnavailable` from
    the key source, the revocation, the workload check or the API-key exchange propagates
    (identity's keys, Redis, tracking or identity out of reach: fail closed, and the
    caller may try again), and the login throttle's 429 for an API key.
    """

    def __init__(self, *, cookie_name: str, kinds: Collection[str]) -> None:
        self.cookie_name = cookie_name
        self.kinds = frozenset(kinds)

    def token(self, conn: HTTPConnection) -> str | None:
        """The credential the request presents, if any."""
        return self.credential(conn.scope)

    def credential(self, scope: Scope) -> str | None:
        """The credential a request presents, read as Starlette's ``conn.cookies`` and
        ``conn.headers`` would (every ``Cookie`` header, the later value of a name
        winning; the first ``Authorization`` header), in one pass over the headers."""
        cookie_headers: list[bytes] = []
        authorization: bytes | None = None
        for name, value in scope["headers"]:
            if name == b"cookie":
                cookie_headers.append(value)
            elif name == b"authorization" and authorization is None:
                authorization = value
        if cookie_headers:
            cookies: dict[str, str] = {}
            for header in cookie_headers:
                cookies.update(cookie_parser(header.decode("latin-1")))
            cookie = cookies.get(self.cookie_name)
            if cookie:
                return cookie
        return None if authorization is None else _bearer(authorization.decode("latin-1"))

    async def authenticate_scope(self, scope: Scope) -> AuthResult | None:
        raw = self.credential(scope)
        if raw is None:
            return None
        state = scope.setdefault("state", {})
        verifier: TokenVerifier | None = state.get("verifier")
        if verifier is None:
            raise RuntimeError("JWTAuthBackend needs state.verifier; yield it from the lifespan")
        if raw.startswith(API_KEY_PREFIX):
            return await self._api_key(raw, scope, state, verifier)
        return await self._jwt(raw, state, verifier)

    async def _api_key(
        self, raw: str, scope: Scope, state: dict[str, Any], verifier: TokenVerifier
    ) -> AuthResult:
        """A ``ZENKEY_`` key: the token of a login with it (see
        :mod:`shared.auth.api_keys`), checked as any token. A kept token found revoked is
        exchanged again once, so the caller gets the key's own refusal (or, the key
        reactivated, a token that stands)."""
        tokens: APIKeyTokens | None = state.get("api_key_tokens")
        if tokens is None:
            return AuthCredentials([]), RefusedCaller("API keys are not accepted by this service")
        client = scope.get("client")
        address = client[0] if client else None
        try:
            token = await tokens.token(raw, address)
            result = await self._jwt(token, state, verifier)
            if isinstance(result[1], RefusedCaller) and result[1].reason == REVOKED:
                token = await tokens.token(raw, address, refused=token)
                result = await self._jwt(token, state, verifier)
        except APIKeyRefused as exc:
            return AuthCredentials([]), RefusedCaller(exc.reason)
        return result

    async def _jwt(self, raw: str, state: dict[str, Any], verifier: TokenVerifier) -> AuthResult:
        try:
            token = await verifier.verify(raw, kinds=self.kinds)
        except InvalidToken as exc:
            TOKEN_VERIFICATIONS.labels(exc.outcome).inc()
            return AuthCredentials([]), RefusedCaller(exc.message)
        if token.kind == TokenKind.DEVICE and token.device_id is None:
            # A device's token lives only as long as its device: without the id, neither
            # locking nor deleting the device could end it. Identity never issues one.
            TOKEN_VERIFICATIONS.labels("invalid").inc()
            return AuthCredentials([]), RefusedCaller("device token lacks its device id")
        revocations: RevocationList | None = state.get("revocations")
        if revocations is not None and await revocations.is_revoked(token, now=verifier.clock()):
            TOKEN_VERIFICATIONS.labels("revoked").inc()
            return AuthCredentials([]), RefusedCaller(REVOKED)
        if token.kind == TokenKind.WORKLOAD:
            checker: WorkloadScopes | None = state.get("workload_scopes")
            reason = (
                "workload tokens are not accepted by this service"
                if checker is None
                else await checker.refusal(token)
            )
            if reason is not None:
                TOKEN_VERIFICATIONS.labels("workload_refused").inc()
                return AuthCredentials([]), RefusedCaller(reason)
        TOKEN_VERIFICATIONS.labels("accepted").inc()
        scopes = ["authenticated", f"kind:{token.kind}"]
        if token.is_admin:
            scopes.append("admin")
        return AuthCredentials(scopes), Principal(token)


def require_principal(conn: HTTPConnection, *, kinds: Collection[str] | None = None) -> Principal:
    """The authenticated caller, or the reference's 401 answer.

    No credentials → ``{"detail": "Not authenticated"}``; refused credentials →
    ``CredentialsNotValid`` with the reason; a valid token of a kind not in ``kinds`` →
    ``AuthorizationException``.
    """
    user = conn.user
    if isinstance(user, RefusedCaller):
        raise Unauthorized(
            f"Authentication error: {user.reason}",
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
    if not isinstance(user, Principal):
        raise HTTPDetailError(401, "Not authenticated", headers={"WWW-Authenticate": "Bearer"})
    if kinds is not None:
        require_kind(user, kinds)
    return user


def require_kind(principal: Principal, kinds: Collection[str]) -> None:
    """``principal``'s token is of one of ``kinds``, else ``AuthorizationException``."""
    if principal.kind not in kinds:
        raise AuthorizationFailed(f"A {principal.kind} token may not be used for this operation.")


class MaybeAdmin(Protocol):
    """Whoever a request acts for, as far as the admin check goes."""

    @property
    def is_admin(self) -> bool: ...


def ensure_admin(caller: MaybeAdmin, action: str = "perform this operation") -> None:
    """403 unless ``caller`` is an admin: the check a service makes on a caller its
    handler already resolved (:func:`require_admin` makes it on the connection)."""
    if not caller.is_admin:
        raise Forbidden(f"Only admins may {action}.")


def require_admin(
    conn: HTTPConnection,
    *,
    action: str = "perform this operation",
    kinds: Collection[str] | None = None,
) -> Principal:
    """The authenticated caller if it is an admin; 403 otherwise."""
    principal = require_principal(conn, kinds=kinds)
    ensure_admin(principal, action)
    return principal
