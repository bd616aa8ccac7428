"""Where verifiers find public keys: a JWKS held in memory, or identity's JWKS over HTTP.

A key source answers a key, ``None`` (no such key is trusted: the token is refused with
401), or raises :class:`KeysUnavailable` (503) when it cannot tell, because the key is not
among those it holds and the key set could not be fetched.

Only Ed25519 keys (``kty`` OKP, ``alg`` EdDSA or absent, ``use`` sig or absent) are taken
from a JWKS. Anything else is skipped, so a JWKS cannot smuggle in, say, an HMAC secret
that a forged token could then be "verified" with.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, Protocol

import httpx
import jwt

from shared.errors import ServiceUnavailable

__all__ = ["JWKSClient", "KeySource", "KeysUnavailable", "StaticKeySource", "parse_jwks"]

logger = logging.getLogger(__name__)

ALGORITHM = "EdDSA"


class KeysUnavailable(ServiceUnavailable):
    """The token's key is not among the keys at hand and identity's key set cannot be
    fetched now, so whether the token is genuine cannot be told (503 with
    ``Retry-After``: the token may be good, and asked again later the answer may be)."""

    def __init__(self, *, retry_after: int) -> None:
        super().__init__(
            "The keys that verify tokens cannot be fetched from identity right now; "
            "try again shortly.",
            headers={"Retry-After": str(max(1, retry_after))},
        )


class KeySource(Protocol):
    """Looks up a verification key by ``kid``."""

    async def get(self, kid: str) -> jwt.PyJWK | None:
        """The key named ``kid``, or ``None`` when no such key is trusted.

        Raises :class:`KeysUnavailable` when it cannot be told (the keys are fetched
        from elsewhere, and could not be).
        """
        ...


def _parse_key(entry: Any) -> tuple[str, jwt.PyJWK] | None:
    if not isinstance(entry, Mapping):
        logger.warning("skipping a JWKS entry that is not an object")
        return None
    kid = entry.get("kid")
    if not isinstance(kid, str) or not kid:
        logger.warning("skipping a JWKS key without a kid")
        return None
    if (
        entry.get("kty") != "OKP"
        or entry.get("crv") != "Ed25519"
        or entry.get("alg", ALGORITHM) != ALGORITHM
        or entry.get("use", "sig") != "sig"
    ):
        logger.info("skipping JWKS key %s: not an Ed25519 signing key", kid)
        return None
    try:
        key = jwt.PyJWK(dict(entry), algorithm=ALGORITHM)
    except (jwt.PyJWTError, ValueError, TypeError) as exc:
        logger.warning("skipping JWKS key %s: %s", kid, exc)
        return None
    return kid, key


def parse_jwks(jwks: Mapping[str, Any]) -> dict[str, jwt.PyJWK]:
    """The usable keys of a JWKS document, by ``kid``.

    Raises ``ValueError`` when the document has no ``keys`` list. Unsupported or broken
    keys are skipped (and logged); of two keys with the same ``kid`` the first wins.
    """
    entries = jwks.get("keys") if isinstance(jwks, Mapping) else None
    if not isinstance(entries, list):
        raise ValueError("a JWKS document needs a 'keys' list")
    keys: dict[str, jwt.PyJWK] = {}
    for entry in entries:
        parsed = _parse_key(entry)
        if parsed is None:
            continue
        kid, key = parsed
        if kid in keys:
            logger.warning("JWKS lists key id %s more than once; keeping the first", kid)
            continue
        keys[kid] = key
    return keys


class StaticKeySource:
    """A key source over a JWKS held in memory, replaced wholesale with :meth:`set_jwks`.

    Identity verifies its own tokens with one (fed from its key ring); tests use it too.
    """

    def __init__(self, jwks: Mapping[str, Any] | None = None) -> None:
        self._keys: dict[str, jwt.PyJWK] = parse_jwks(jwks) if jwks is not None else {}

    def set_jwks(self, jwks: Mapping[str, Any]) -> None:
        """Trust exactly the keys of ``jwks`` from now on."""
        self._keys = parse_jwks(jwks)

    async def get(self, kid: str) -> jwt.PyJWK | None:
        return self._keys.get(kid)


def _seconds(value: float | timedelta) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


class JWKSClient:
    """Identity's JWKS, fetched over HTTP and cached.

    - The set is cached for ``ttl`` seconds; a lookup after that refetches it, so keys
      that leave the JWKS stop verifying at the latest ``ttl`` seconds later.
    - An unknown ``kid`` triggers a refetch (a key was just rotated in), but fetches
      happen at most once per ``min_refresh_interval`` seconds, so a flood of tokens with
      random ``kid`` values cannot hammer identity.
    - Concurrent lookups that need a fetch share one.
    - When a fetch fails, the cached keys keep serving (and the failure is logged), so a
      short identity outage does not log everyone out.
    - A ``kid`` that is not cached while the last fetch failed (identity unreachable, a
      timeout, an error status, a body that is no JWKS) raises :class:`KeysUnavailable`
      with ``Retry-After`` until the next fetch may be tried: the key may well be
      identity's, so the token is not called invalid. Only a ``kid`` missing from a key set
      that was fetched is unknown (``None``). Such lookups are rate-limited like any
      other, so tokens with made-up ``kid`` values cannot make every request call
      identity during its outage either.

    Durations are seconds or timedeltas (``settings.jwks_cache_ttl`` fits as is).
    ``clock`` (monotonic seconds) is injectable for tests.
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        url: str,
        *,
        ttl: float | timedelta = 600.0,
        min_refresh_interval: float | timedelta = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._http = http
        self._url = url
        self._ttl = _seconds(ttl)
        self._min_refresh_interval = _seconds(min_refresh_interval)
        self._clock = clock
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        # Whether the last fetch failed: a kid not cached is then not known to be unknown.
        self._failing = False
        # Bumped whenever a fetch finishes; lookups that waited on the lock compare it to
        # learn whether someone else fetched meanwhile.
        self._generation = 0
        self._lock = asyncio.Lock()

    async def get(self, kid: str) -> jwt.PyJWK | None:
        now = self._clock()
        key = self._keys.get(kid)
        stale = self._fetched_at is None or now - self._fetched_at >= self._ttl
        if key is not None and not stale:
            return key
        # A fetch under way is waited for even when the rate limit forbids a new one: it
        # may be bringing exactly this key.
        if not self._may_fetch(now) and not self._lock.locked():
            return self._answer(key)
        generation = self._generation
        async with self._lock:
            if self._generation == generation and self._may_fetch(self._clock()):
                await self._fetch()
        return self._answer(self._keys.get(kid))

    def _answer(self, key: jwt.PyJWK | None) -> jwt.PyJWK | None:
        if key is not None or not self._failing:
            return key
        # The earliest a lookup may fetch again.
        assert self._attempted_at is not None
        wait = self._min_refresh_interval - (self._clock() - self._attempted_at)
        raise KeysUnavailable(retry_after=math.ceil(wait))

    def _may_fetch(self, now: float) -> bool:
        return self._attempted_at is None or now - self._attempted_at >= self._min_refresh_interval

    async def refresh(self) -> bool:
        """Fetch the JWKS now, regardless of the cache (e.g. to warm it at startup).

        Returns whether the fetch succeeded; on failure the cached keys are kept.
        """
        async with self._lock:
            return await self._fetch()

    async def _fetch(self) -> bool:
        self._attempted_at = self._clock()
        try:
            response = await self._http.get(self._url, headers={"Accept": "application/json"})
            response.raise_for_status()
            keys = parse_jwks(response.json())
        except (httpx.HTTPError, ValueError) as exc:
            logger.warning(
                "fetching the JWKS from %s failed (%s); keeping %d cached keys",
                self._url,
                exc,
                len(self._keys),
            )
            self._failing = True
            self._generation += 1
            return False
        self._keys = keys
        self._fetched_at = self._clock()
        self._failing = False
        self._generation += 1
        return True
