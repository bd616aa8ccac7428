"""Tokens: issuing (identity only), verification, revocation, and Starlette auth.

Identity signs with :class:`TokenSigner` and publishes :func:`public_jwk` keys as a JWKS.
Every service verifies with a :class:`TokenVerifier` over a :class:`KeySource`
(:class:`JWKSClient` for identity's JWKS, :class:`StaticKeySource` in-process), checks
the :class:`RevocationList` (and, for workload tokens, their object through
:class:`WorkloadScopes`; a ``ZENKEY_`` API key is exchanged for its login's token through
:class:`APIKeyTokens`), and installs :class:`JWTAuthBackend`::

    verifier = TokenVerifier(JWKSClient(http, settings.jwks_url), issuer=..., audience=...)
    Middleware(AuthMiddleware, backend=JWTAuthBackend(cookie_name=..., kinds=...))

    async def get(request: Request) -> Response:
        principal = require_principal(request)
"""

from shared.auth.api_keys import (
    API_KEY_PREFIX,
    APIKeyRefused,
    APIKeySource,
    APIKeyToken,
    APIKeyTokens,
    EncodedKey,
    ExchangeLimit,
    IdentityKeySource,
)
from shared.auth.backend import (
    AuthMiddleware,
    JWTAuthBackend,
    Principal,
    RefusedCaller,
    ScopeAuthenticationBackend,
    bearer_token,
    ensure_admin,
    require_admin,
    require_kind,
    require_principal,
)
from shared.auth.jwks import JWKSClient, KeySource, KeysUnavailable, StaticKeySource, parse_jwks
from shared.auth.keys import (
    generate_signing_key,
    new_kid,
    private_key_from_pem,
    private_key_to_pem,
    public_jwk,
)
from shared.auth.revocation import RevocationList
from shared.auth.signer import TokenSigner
from shared.auth.tokens import TokenKind, VerifiedToken
from shared.auth.verifier import InvalidToken, TokenVerifier, compact_segments
from shared.auth.workload import (
    ScopeKind,
    ScopeSource,
    ScopeState,
    TrackingScopeSource,
    WorkloadScope,
    WorkloadScopes,
    scope_of,
    scopes_named,
)

__all__ = [
    "API_KEY_PREFIX",
    "APIKeyRefused",
    "APIKeySource",
    "APIKeyToken",
    "APIKeyTokens",
    "AuthMiddleware",
    "EncodedKey",
    "ExchangeLimit",
    "IdentityKeySource",
    "InvalidToken",
    "JWKSClient",
    "JWTAuthBackend",
    "KeySource",
    "KeysUnavailable",
    "Principal",
    "RefusedCaller",
    "RevocationList",
    "ScopeAuthenticationBackend",
    "ScopeKind",
    "ScopeSource",
    "ScopeState",
    "StaticKeySource",
    "TokenKind",
    "TokenSigner",
    "TokenVerifier",
    "TrackingScopeSource",
    "VerifiedToken",
    "WorkloadScope",
    "WorkloadScopes",
    "bearer_token",
    "compact_segments",
    "ensure_admin",
    "generate_signing_key",
    "new_kid",
    "parse_jwks",
    "private_key_from_pem",
    "private_key_to_pem",
    "public_jwk",
    "require_admin",
    "require_kind",
    "require_principal",
    "scope_of",
    "scopes_named",
]
