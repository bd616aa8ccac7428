"""Starlette authentication from the session cookie or a bearer token.

Install with ``Middleware(AuthenticationMiddleware, backend=JWTAuthBackend(...))``. The
backend never refuses a request: it records who the caller is (a :class:`Principal`),
that the credentials were bad (:class:`InvalidCredentials`), or nobody (Starlette's
``UnauthenticatedUser``). Handlers that need a caller ask with :func:`require_principal`
or :func:`require_admin`, so routes such as ``/login`` keep working with a stale cookie.
"""

from __future__ import annotations

from collections.abc import Collection
from uuid import UUID

from starlette.authentication import AuthCredentials, AuthenticationBackend, BaseUser
from starlette.requests import HTTPConnection

from shared.auth.revocation import RevocationList
from shared.auth.tokens import TokenKind, VerifiedToken
from shared.auth.verifier import InvalidToken, TokenVerifier
from shared.auth.workload import WorkloadScopes
from shared.errors import AuthorizationFailed, Forbidden, HTTPDetailError, Unauthorized


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


class InvalidCredentials(BaseUser):
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


def bearer_token(conn: HTTPConnection) -> str | None:
    """The credential of an ``Authorization: Bearer`` header, if any."""
    scheme, _, credentials = conn.headers.get("authorization", "").partition(" ")
    credentials = credentials.strip()
    if scheme.lower() != "bearer" or not credentials:
        return None
    return credentials


class JWTAuthBackend(AuthenticationBackend):
    """Authenticates with the cookie ``cookie_name`` or, without one, a bearer token.

    The cookie wins when both are present, as in the reference server. Only tokens of
    ``kinds`` are accepted. The verifier and the revocation list are read from the
    request state (``state.verifier``, and ``state.revocations`` if the service checks
    revocation), because the app's lifespan creates them.

    A workload token is also checked against its object (``state.workload_scopes``, a
    :class:`~shared.auth.workload.WorkloadScopes`; without one, workload tokens are
    refused).

    Never raises for a bad token; only :class:`~shared.errors.ServiceUnavailable` from
    the revocation or workload check propagates (Redis or tracking down: fail closed).
    """

    def __init__(self, *, cookie_name: str, kinds: Collection[str]) -> None:
        self.cookie_name = cookie_name
        self.kinds = frozenset(kinds)

    def token(self, conn: HTTPConnection) -> str | None:
        """The credential the request presents, if any."""
        cookie = conn.cookies.get(self.cookie_name)
        if cookie:
            return cookie
        return bearer_token(conn)

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        raw = self.token(conn)
        if raw is None:
            return None
        verifier: TokenVerifier | None = getattr(conn.state, "verifier", None)
        if verifier is None:
            raise RuntimeError("JWTAuthBackend needs state.verifier; yield it from the lifespan")
        try:
            token = await verifier.verify(raw, kinds=self.kinds)
        except InvalidToken as exc:
            return AuthCredentials([]), InvalidCredentials(exc.message)
        revocations: RevocationList | None = getattr(conn.state, "revocations", None)
        if revocations is not None and await revocations.is_revoked(token):
            return AuthCredentials([]), InvalidCredentials("token has been revoked")
        if token.kind == TokenKind.WORKLOAD:
            checker: WorkloadScopes | None = getattr(conn.state, "workload_scopes", None)
            reason = (
                "workload tokens are not accepted by this service"
                if checker is None
                else await checker.refusal(token)
            )
            if reason is not None:
                return AuthCredentials([]), InvalidCredentials(reason)
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
    if isinstance(user, InvalidCredentials):
        raise Unauthorized(
            f"Authentication error: {user.reason}",
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
    if not isinstance(user, Principal):
        raise HTTPDetailError(401, "Not authenticated", headers={"WWW-Authenticate": "Bearer"})
    if kinds is not None and user.kind not in kinds:
        raise AuthorizationFailed(f"A {user.kind} token may not be used for this operation.")
    return user


def require_admin(
    conn: HTTPConnection,
    *,
    action: str = "perform this operation",
    kinds: Collection[str] | None = None,
) -> Principal:
    """The authenticated caller if it is an admin; 403 otherwise."""
    principal = require_principal(conn, kinds=kinds)
    if not principal.is_admin:
        raise Forbidden(f"Only admins may {action}.")
    return principal
