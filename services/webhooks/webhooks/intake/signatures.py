"""HMAC-SHA256 signatures over the exact raw body, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac


def hmac_hex(key: bytes, *parts: bytes) -> str:
    """Lower-case hex HMAC-SHA256 of the concatenated ``parts``."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        mac.update(part)
    return mac.hexdigest()


def same(expected: str, presented: str) -> bool:
    """Constant-time equality (on bytes, so non-ASCII input cannot raise)."""
    return hmac.compare_digest(expected.encode(), presented.encode("utf-8", "surrogateescape"))
