"""Verified tokens are remembered briefly; expiry and kind are still checked each time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import jwt
import pytest

from shared.auth import InvalidToken, StaticKeySource, TokenSigner, TokenVerifier
from tests.shared.auth.conftest import AUDIENCE, ISSUER


class CountingKeys(StaticKeySource):
    """A key source that counts lookups: one lookup per signature check."""

    def __init__(self, signer: TokenSigner) -> None:
        super().__init__({"keys": [signer.public_jwk()]})
        self.lookups = 0

    async def get(self, kid: str) -> jwt.PyJWK | None:
        self.lookups += 1
        return await super().get(kid)


def _verifier(keys: CountingKeys, **options: object) -> TokenVerifier:
    return TokenVerifier(keys, issuer=ISSUER, audience=AUDIENCE, **options)  # type: ignore[arg-type]


def _token(signer: TokenSigner, lifetime: timedelta, now: datetime | None = None) -> str:
    token, _ = signer.issue(
        subject="user-1", kind="access", audience=AUDIENCE, lifetime=lifetime, now=now
    )
    return token


async def test_a_verified_token_is_not_verified_again_within_the_ttl(signer: TokenSigner):
    keys = CountingKeys(signer)
    verifier = _verifier(keys)
    token = _token(signer, timedelta(minutes=5))
    first = await verifier.verify(token, kinds=["access"])
    second = await verifier.verify(token, kinds=["access"])
    assert keys.lookups == 1
    assert second.jti == first.jti


async def test_a_cached_token_is_verified_again_after_the_ttl(signer: TokenSigner):
    keys = CountingKeys(signer)
    verifier = _verifier(keys, cache_ttl=0.0)
    token = _token(signer, timedelta(minutes=5))
    await verifier.verify(token, kinds=["access"])
    await verifier.verify(token, kinds=["access"])
    assert keys.lookups == 2


async def test_a_cached_token_still_has_its_kind_checked(signer: TokenSigner):
    verifier = _verifier(CountingKeys(signer))
    token = _token(signer, timedelta(minutes=5))
    await verifier.verify(token, kinds=["access"])
    with pytest.raises(InvalidToken, match="kind"):
        await verifier.verify(token, kinds=["service"])


class Clock:
    """The verifier's now, moved by the test."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


async def test_a_cached_token_that_expires_is_refused(signer: TokenSigner):
    clock = Clock()
    keys = CountingKeys(signer)
    verifier = _verifier(keys, leeway=0, clock=clock)
    token = _token(signer, timedelta(seconds=60), now=clock.now)
    await verifier.verify(token, kinds=["access"])
    clock.now += timedelta(seconds=60)
    with pytest.raises(InvalidToken, match="expired"):
        await verifier.verify(token, kinds=["access"])
    assert keys.lookups == 1


async def test_a_refused_token_is_never_cached(signer: TokenSigner, key_source: StaticKeySource):
    keys = CountingKeys(signer)
    verifier = _verifier(keys)
    token = _token(signer, timedelta(minutes=5))
    tampered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    for _ in range(2):
        with pytest.raises(InvalidToken):
            await verifier.verify(tampered, kinds=["access"])
    assert keys.lookups == 2
