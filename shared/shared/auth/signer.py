"""Signing tokens (used by the issuer only)."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from shared.auth.keys import public_jwk

__all__ = ["TokenSigner"]

ALGORITHM = "EdDSA"

# Claims the signer owns; ``extra`` may not override them, so a caller cannot mint a
# token with a forged issuer or lifetime by accident.
RESERVED_CLAIMS = frozenset({"iss", "aud", "sub", "iat", "nbf", "exp", "jti", "kind"})


def _json_value(value: Any) -> Any:
    return str(value) if isinstance(value, uuid.UUID) else value


class TokenSigner:
    """Signs JWTs with one Ed25519 key, named by ``kid`` in the header.

    Every token carries ``iss``, ``aud``, ``sub``, ``iat``, ``nbf``, ``jti`` (random),
    ``kind`` and, unless the lifetime is ``None``, ``exp``.

    ``iat`` keeps microseconds (a fractional NumericDate, RFC 7519 §2, as the reference
    server writes it), so a subject revocation cuts exactly between the tokens issued
    before it and those issued right after, such as the new session of a password change
    in the same second. ``nbf`` and ``exp`` are whole seconds.
    """

    def __init__(self, private_key: Ed25519PrivateKey, *, kid: str, issuer: str) -> None:
        self._private_key = private_key
        self.kid = kid
        self.issuer = issuer

    def public_jwk(self) -> dict[str, Any]:
        """The JWK verifiers need for this signer's tokens."""
        return public_jwk(self._private_key, self.kid)

    def issue(
        self,
        *,
        subject: str,
        kind: str,
        audience: str | Sequence[str],
        lifetime: timedelta | None,
        extra: Mapping[str, Any] | None = None,
        now: datetime | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """Sign a token and return it with its claims.

        ``lifetime=None`` omits ``exp``; only kinds the verifier accepts without expiry
        (workload tokens) should be issued that way. ``extra`` adds claims such as
        ``name``, ``admin``, ``device_id`` or ``pipeline_run_id``; UUID values are written
        as strings. ``now`` (aware) pins the issue time, for tests and for tokens whose
        lifetime is anchored elsewhere.
        """
        if not subject or not kind:
            raise ValueError("a token needs a subject and a kind")
        if lifetime is not None and lifetime <= timedelta(0):
            raise ValueError("a token lifetime must be positive")
        if now is None:
            now = datetime.now(UTC)
        elif now.tzinfo is None:
            raise ValueError("now must be timezone-aware")
        extra = extra or {}
        clashing = RESERVED_CLAIMS.intersection(extra)
        if clashing:
            raise ValueError(f"extra claims may not set {sorted(clashing)}")

        issued_at = now.timestamp()
        not_before = math.floor(issued_at)
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": audience if isinstance(audience, str) else list(audience),
            "sub": subject,
            "iat": issued_at,
            "nbf": not_before,
            "jti": uuid.uuid4().hex,
            "kind": str(kind),
        }
        if lifetime is not None:
            claims["exp"] = not_before + math.ceil(lifetime.total_seconds())
        claims.update({key: _json_value(value) for key, value in extra.items()})
        token = jwt.encode(
            claims,
            self._private_key,
            algorithm=ALGORITHM,
            headers={"kid": self.kid, "typ": "JWT"},
        )
        return token, claims
