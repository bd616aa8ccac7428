"""Hashes of high-entropy secrets (activation tokens, API keys, device and user codes).

Secrets of 128 bits or more need no password hash (ASVS 6.5.2): a SHA-256 is stored and
compared in constant time, so the database never holds a usable secret.
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["digest", "matches"]


def digest(secret: str) -> str:
    """The stored form of ``secret``: 64 hex characters."""
    return hashlib.sha256(secret.encode()).hexdigest()


def matches(stored: str | None, secret: str) -> bool:
    """Whether ``secret`` hashes to ``stored``; constant time, ``False`` when nothing is
    stored."""
    if stored is None:
        hmac.compare_digest(digest(secret), digest(""))
        return False
    return hmac.compare_digest(stored, digest(secret))
