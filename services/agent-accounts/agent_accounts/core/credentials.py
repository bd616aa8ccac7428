"""Generated secrets: API keys, activation tokens, device codes. Only SHA-256 hashes are
stored (each secret carries 256 random bits, so a plain hash is enough: see
:mod:`shared.secret_hash`), and they are compared in constant time."""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import uuid

API_KEY_PREFIX = "KITKEY_"
# Keys issued before the prefix became kitaru's own keep working: only the secret is
# hashed, so the prefix a key carries never mattered to its check.
API_KEY_PREFIXES = (API_KEY_PREFIX, "SVCKEY_")
# An API key is ~171 characters; anything much longer is not one of ours.
MAX_API_KEY_LENGTH = 512


def new_secret() -> str:
    """256 bits from the CSPRNG as 64 hex characters (kitaru's ``token_hex(32)``)."""
    return secrets.token_hex(32)


def encode_api_key(key_id: uuid.UUID, secret: str) -> str:
    """``KITKEY_`` + base64 of ``{"id": ..., "key": ...}``, the reference's layout: the
    unmodified kitaru CLI keeps a key it was given only when it starts with ``KITKEY_``."""
    payload = json.dumps({"id": str(key_id), "key": secret})
    return API_KEY_PREFIX + base64.b64encode(payload.encode()).decode("ascii")


def is_api_key(credential: str) -> bool:
    """Whether a bearer is meant as an API key (by its prefix) rather than a token."""
    return credential.startswith(API_KEY_PREFIXES)


def decode_api_key(key: str) -> tuple[uuid.UUID, str] | None:
    """The key's id and secret, or ``None`` for anything that is not a well-formed key."""
    if not is_api_key(key) or len(key) > MAX_API_KEY_LENGTH:
        return None
    try:
        # Both prefixes are seven characters.
        payload = json.loads(base64.b64decode(key[len(API_KEY_PREFIX) :], validate=True))
        key_id, secret = uuid.UUID(payload["id"]), payload["key"]
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(secret, str) or not secret:
        return None
    return key_id, secret
