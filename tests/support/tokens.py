"""Tokens spelled other ways than their issuer wrote them."""

from __future__ import annotations


def padded(token: str) -> str:
    """The same compact JWS with '=' padding on its signature segment (an Ed25519
    signature is 86 characters, an HS256 one 43: neither is a multiple of 4)."""
    respelled = token + "=" * (-len(token.rsplit(".", 1)[1]) % 4)
    assert respelled != token
    return respelled
