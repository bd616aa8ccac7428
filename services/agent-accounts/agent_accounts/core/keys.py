"""This trust domain's signing keys, from settings.

``SERVICE_JWT_SIGNING_KEYS`` holds Ed25519 private keys as base64url seeds (32 bytes):
the first signs, every one verifies. A key's ``kid`` is derived from its public half, so
every replica names the same key the same way with nothing stored.
"""

from __future__ import annotations

import base64
import binascii
import hashlib

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from shared.auth import StaticKeySource, TokenSigner, public_jwk


class SigningKeyError(ValueError):
    """A configured signing key is not a base64url Ed25519 seed."""


def _seed(text: str, position: int) -> bytes:
    try:
        seed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise SigningKeyError(f"signing key #{position} is not base64url") from None
    if len(seed) != 32:
        raise SigningKeyError(f"signing key #{position} must be 32 bytes, not {len(seed)}")
    return seed


def kid_for(key: Ed25519PrivateKey) -> str:
    raw = key.public_key().public_bytes(
        encoding=serialization.Encoding.Raw, format=serialization.PublicFormat.Raw
    )
    return base64.urlsafe_b64encode(hashlib.sha256(raw).digest()[:12]).decode("ascii")


def load_keys(configured: str, *, issuer: str) -> tuple[TokenSigner, StaticKeySource]:
    """The signer (first key) and a key source trusting every configured key."""
    texts = [part.strip() for part in configured.split(",") if part.strip()]
    if not texts:
        raise SigningKeyError("no signing key configured")
    keys = [Ed25519PrivateKey.from_private_bytes(_seed(t, i + 1)) for i, t in enumerate(texts)]
    signer = TokenSigner(keys[0], kid=kid_for(keys[0]), issuer=issuer)
    source = StaticKeySource({"keys": [public_jwk(k, kid_for(k)) for k in keys]})
    return signer, source
