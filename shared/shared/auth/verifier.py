"""Verifying tokens: the checks every service runs on every request.

The header is parsed and judged by this module before any key is looked up, so a token
that names a forbidden algorithm or a remote key (``jku``, ``x5u``, ``jwk``) is refused
without touching the key source. PyJWT then checks the signature with the one algorithm
the key is bound to, and the registered claims.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any, NoReturn

import jwt

from shared.auth.jwks import KeySource
from shared.auth.tokens import VerifiedToken
from shared.errors import Unauthorized

__all__ = ["InvalidToken", "TokenVerifier", "compact_segments"]

logger = logging.getLogger(__name__)

# Asymmetric algorithms and the JWK key type each needs. Symmetric algorithms and "none"
# are not listed, so no configuration can allow them.
KEY_TYPES: dict[str, str] = {
    "EdDSA": "OKP",
    "RS256": "RSA",
    "RS384": "RSA",
    "RS512": "RSA",
    "PS256": "RSA",
    "PS384": "RSA",
    "PS512": "RSA",
    "ES256": "EC",
    "ES384": "EC",
    "ES512": "EC",
}

# Header parameters that point at or embed key material, or demand extensions. A verifier
# that honoured them would let the token choose its own key (RFC 8725 §3.10).
FORBIDDEN_HEADERS = frozenset({"jku", "x5u", "jwk", "x5c", "crit", "b64"})

# Our tokens are a few hundred bytes; refusing huge ones bounds the parsing work an
# anonymous caller can cause.
MAX_TOKEN_LENGTH = 8192
MAX_KID_LENGTH = 128
# Verified tokens remembered per process (least recently verified dropped first).
MAX_CACHED_TOKENS = 10000

_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")
_DEFAULT_REQUIRED = ("iss", "aud", "sub", "iat", "jti", "kind")


class InvalidToken(Unauthorized):
    """The presented token is malformed, forged, expired or not accepted here (401).

    The message says why in plain words and never contains the token.
    """

    default_headers = {"WWW-Authenticate": 'Bearer error="invalid_token"'}

    outcome = "invalid"
    """Why, as one word of a bounded set (the token verification metric's outcome)."""

    def __init__(
        self,
        message: str = "",
        *,
        outcome: str = "invalid",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message, headers=headers)
        self.outcome = outcome


def _reject(reason: str, outcome: str = "invalid") -> NoReturn:
    raise InvalidToken(reason, outcome=outcome)


def _duplicate_checking_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate member {key!r}")
        result[key] = value
    return result


def _no_constants(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def _segment_bytes(segment: str, what: str) -> bytes:
    """The bytes of one segment of a compact JWS, which must be spelled canonically."""
    # Only the URL-safe alphabet, no '=' padding (RFC 7515 §2), and no stray low bits in
    # the last character: re-encoding must give the segment back. PyJWT accepts padding,
    # which would give one token many spellings (and many cache and denylist entries).
    if not _SEGMENT.fullmatch(segment) or len(segment) % 4 == 1:
        _reject(f"token {what} is not valid base64url")
    try:
        data = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        _reject(f"token {what} is not valid base64url")
    if base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii") != segment:
        _reject(f"token {what} is not canonical base64url")
    return data


def compact_segments(token: str) -> tuple[bytes, bytes, bytes]:
    """The decoded header, payload and signature of a compact JWS.

    Raises :class:`InvalidToken` unless ``token`` is at most ``MAX_TOKEN_LENGTH``
    characters of three segments, each in canonical base64url: the one spelling
    ``base64.urlsafe_b64encode`` gives, without padding. Every token a service accepts,
    whoever verifies its signature, passes through here first.
    """
    if not isinstance(token, str) or len(token) > MAX_TOKEN_LENGTH:
        _reject("token is malformed")
    parts = token.split(".")
    if len(parts) != 3 or not all(parts):
        _reject("token is malformed")
    header, payload, signature = parts
    return (
        _segment_bytes(header, "header"),
        _segment_bytes(payload, "payload"),
        _segment_bytes(signature, "signature"),
    )


def _json_object(data: bytes, what: str) -> dict[str, Any]:
    """A JSON object without duplicate keys or non-JSON constants."""
    try:
        value = json.loads(
            data.decode("utf-8"),
            object_pairs_hook=_duplicate_checking_object,
            parse_constant=_no_constants,
        )
    except (ValueError, RecursionError):
        # The parser's message could quote the token; say only what went wrong.
        _reject(f"token {what} is not valid JSON")
    if not isinstance(value, dict):
        _reject(f"token {what} is not a JSON object")
    return value


def _claim_number(claims: dict[str, Any], name: str) -> int | float | None:
    """A time claim's number (``None`` when absent); anything else is refused."""
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        _reject(f"token claim '{name}' is not a timestamp")
    return value


def _numeric_date(claims: dict[str, Any], name: str) -> datetime | None:
    value = _claim_number(claims, name)
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        _reject(f"token claim '{name}' is out of range")


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _timestamp(claims: dict[str, Any], name: str) -> int | None:
    """A time claim as a number, compared the way PyJWT compares it (whole seconds)."""
    value = _claim_number(claims, name)
    if value is None:
        return None
    try:
        return int(value)
    except (OverflowError, ValueError):
        _reject(f"token claim '{name}' is out of range")


def _pyjwt_reason(exc: jwt.PyJWTError) -> str:
    match exc:
        case jwt.MissingRequiredClaimError():
            return f"token lacks the required '{exc.claim}' claim"
        case jwt.InvalidAudienceError():
            return "token audience is not accepted here"
        case jwt.InvalidIssuerError():
            return "token issuer is not trusted"
        case jwt.InvalidSignatureError():
            return "token signature is invalid"
        case jwt.InvalidAlgorithmError():
            return "token algorithm is not allowed"
        case jwt.DecodeError():
            return "token is malformed"
        case _:
            return "token is invalid"


class TokenVerifier:
    """Checks tokens of one issuer for one audience.

    ``algorithms`` is the allowlist (asymmetric algorithms only). ``leeway`` (seconds or
    a timedelta) absorbs clock skew on ``exp``, ``nbf`` and ``iat``. Tokens of
    ``kinds_without_exp`` may omit ``exp``; every other kind must carry it. Revocation is
    not checked here: see :class:`~shared.auth.RevocationList`.

    ``clock`` is now (aware) for the time claims: the service's clock, so that a test
    moving it moves token expiry too. PyJWT checks the signature and every other claim;
    ``exp``, ``nbf`` and ``iat`` are checked here against ``clock`` with PyJWT's rules.
    """

    def __init__(
        self,
        keys: KeySource,
        *,
        issuer: str,
        audience: str | Sequence[str],
        algorithms: Sequence[str] = ("EdDSA",),
        leeway: float | timedelta = 30.0,
        kinds_without_exp: Collection[str] = ("workload",),
        cache_ttl: float | timedelta = 10.0,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        unsupported = [alg for alg in algorithms if alg not in KEY_TYPES]
        if unsupported or not algorithms:
            raise ValueError(
                f"algorithms must be non-empty and asymmetric; not allowed: {unsupported}"
            )
        self.keys = keys
        self.issuer = issuer
        self.audience: str | list[str] = audience if isinstance(audience, str) else list(audience)
        self.algorithms = frozenset(algorithms)
        self.leeway = leeway.total_seconds() if isinstance(leeway, timedelta) else leeway
        self.kinds_without_exp = frozenset(kinds_without_exp)
        self.cache_ttl = (
            cache_ttl.total_seconds() if isinstance(cache_ttl, timedelta) else cache_ttl
        )
        self.clock = clock
        # raw token -> (claims verified by signature, monotonic time of the check)
        self._verified_cache: OrderedDict[str, tuple[dict[str, Any], str, float]] = OrderedDict()

    async def verify(self, token: str, *, kinds: Collection[str]) -> VerifiedToken:
        """Verify ``token`` and require its ``kind`` to be one of ``kinds``.

        Raises :class:`InvalidToken` for every way a token can be bad, and lets the key
        source's :class:`~shared.auth.jwks.KeysUnavailable` (503) through when whether the
        token's key is trusted cannot be told now; nothing else.

        A token whose signature and claims were verified in the last ``cache_ttl``
        seconds is not verified again (the signature check is most of a request's auth
        cost); its expiry and kind are checked on every call, and revocation is the
        caller's own check. A retired key stops verifying within ``cache_ttl``.
        """
        cached = self._cached(token)
        if cached is not None:
            claims, kid = cached
            self._check_times(claims)
            return self._verified(token, claims, kid=kid, kinds=kinds)
        header, claims = self._parse(token)
        alg = header["alg"]
        kid = header["kid"]
        key = await self.keys.get(kid)
        if key is None:
            _reject("token was signed by an unknown key", "unknown_key")
        if key.algorithm_name != alg or key.key_type != KEY_TYPES[alg]:
            _reject("token algorithm does not match its key")

        kind = claims.get("kind")
        required = list(_DEFAULT_REQUIRED)
        if not (isinstance(kind, str) and kind in self.kinds_without_exp):
            required.append("exp")
        try:
            verified = jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                options={
                    "require": required,
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                },
            )
        except jwt.InvalidSignatureError as exc:
            _reject(_pyjwt_reason(exc), "bad_signature")
        except jwt.PyJWTError as exc:
            _reject(_pyjwt_reason(exc))
        except (TypeError, ValueError, OverflowError) as exc:
            # PyJWT lets a few type errors in odd claim values escape (e.g. a list as
            # ``exp``); they are still just a bad token.
            logger.debug("token claims failed to validate: %s", type(exc).__name__)
            _reject("token claims are malformed")
        self._check_times(verified)
        result = self._verified(token, verified, kid=kid, kinds=kinds)
        self._remember(token, verified, kid)
        return result

    def _check_times(self, claims: dict[str, Any]) -> None:
        """``iat`` and ``nbf`` not in the future, ``exp`` not past, give or take the
        leeway, on :attr:`clock`."""
        now = self.clock().timestamp()
        issued_at, not_before = _timestamp(claims, "iat"), _timestamp(claims, "nbf")
        if any(t is not None and t > now + self.leeway for t in (issued_at, not_before)):
            _reject("token is not valid yet", "not_yet_valid")
        expires = _timestamp(claims, "exp")
        if expires is not None and expires <= now - self.leeway:
            _reject("token has expired", "expired")

    def _cached(self, token: str) -> tuple[dict[str, Any], str] | None:
        entry = self._verified_cache.get(token)
        if entry is None:
            return None
        claims, kid, checked_at = entry
        if time.monotonic() - checked_at > self.cache_ttl:
            del self._verified_cache[token]
            return None
        return claims, kid

    def _remember(self, token: str, claims: dict[str, Any], kid: str) -> None:
        if self.cache_ttl <= 0:
            return
        self._verified_cache[token] = (claims, kid, time.monotonic())
        while len(self._verified_cache) > MAX_CACHED_TOKENS:
            self._verified_cache.popitem(last=False)

    def _parse(self, token: str) -> tuple[dict[str, Any], dict[str, Any]]:
        header_bytes, payload_bytes, _ = compact_segments(token)
        header = _json_object(header_bytes, "header")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            _reject("token algorithm is not allowed")
        present = FORBIDDEN_HEADERS.intersection(header)
        if present:
            _reject(f"token header parameter '{sorted(present)[0]}' is not allowed")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid or len(kid) > MAX_KID_LENGTH:
            _reject("token header has no valid key id")
        # Parsed here (and again by PyJWT) only to refuse duplicate members, which JSON
        # parsers resolve differently.
        claims = _json_object(payload_bytes, "payload")
        return header, claims

    def _verified(
        self, token: str, claims: dict[str, Any], *, kid: str, kinds: Collection[str]
    ) -> VerifiedToken:
        subject, kind, jti = claims["sub"], claims["kind"], claims["jti"]
        for name, value in (("sub", subject), ("kind", kind), ("jti", jti)):
            if not isinstance(value, str) or not value:
                _reject(f"token claim '{name}' must be a non-empty string")
        if kind not in kinds:
            _reject(f"token kind {kind} not accepted here", "wrong_kind")
        issued_at = _numeric_date(claims, "iat")
        if issued_at is None:
            _reject("token lacks the required 'iat' claim")
        _numeric_date(claims, "nbf")
        return VerifiedToken(
            raw=token,
            claims=MappingProxyType(claims),
            subject=subject,
            kind=kind,
            jti=jti,
            issued_at=issued_at,
            expires_at=_numeric_date(claims, "exp"),
            key_id=kid,
        )
