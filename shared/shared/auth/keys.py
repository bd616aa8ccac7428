"""Ed25519 signing keys: generation, PEM round trip, and their public JWK."""

from __future__ import annotations

import base64
import secrets
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "generate_signing_key",
    "new_kid",
    "private_key_from_pem",
    "private_key_to_pem",
    "public_jwk",
]


def generate_signing_key() -> Ed25519PrivateKey:
    """A fresh Ed25519 private key."""
    return Ed25519PrivateKey.generate()


def private_key_to_pem(key: Ed25519PrivateKey) -> bytes:
    """PKCS#8 PEM, unencrypted: the caller encrypts it before storing it."""
    return key.private_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PrivateFormat.PKCS8,
        encryption_algorithm=serialization.NoEncryption(),
    )


def private_key_from_pem(pem: bytes) -> Ed25519PrivateKey:
    """Load a key written by :func:`private_key_to_pem`.

    Raises ``ValueError`` when the PEM does not hold an Ed25519 private key.
    """
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"expected an Ed25519 private key, got {type(key).__name__}")
    return key


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def public_jwk(key: Ed25519PrivateKey | Ed25519PublicKey, kid: str) -> dict[str, Any]:
    """The public half of ``key`` as an OKP JWK (RFC 8037), ready for a JWKS."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    raw = public.public_bytes(
        encoding=serialization.Encoding.Raw, format=serialization.PublicFormat.Raw
    )
    return {
        "kty": "OKP",
        "crv": "Ed25519",
        "x": _b64url(raw),
        "kid": kid,
        "alg": "EdDSA",
        "use": "sig",
    }


def new_kid() -> str:
    """A random key id: 12 bytes from the CSPRNG, 16 url-safe characters."""
    return secrets.token_urlsafe(12)
