"""``ZENKEY_`` API keys presented directly as the bearer token (or session cookie).

The reference server takes a service account's API key wherever it takes an access token.
Here identity alone can check a key (it holds their hashes), and every service verifies
JWTs locally, so a service exchanges the key once for the token a login with it would give
(``kind`` ``access``, with the key's ``api_key_id`` and ``key_gen`` claims) and keeps that
token in :class:`APIKeyTokens` until shortly before it expires. Every request then
verifies the kept token as usual: the revocation list stops it the moment the key is
deactivated, deleted or rotated past its grace window, or its account deactivated or
deleted, and :class:`~shared.auth.JWTAuthBackend` then asks again, so that the caller
gets the key's own refusal (and a reactivated key works again).

Identity exchanges in process; the other services call identity's
``POST /internal/v1/api_key_tokens`` with their service token (:class:`IdentityKeySource`).
The exchange is the API-key login's: same checks, same reasons, same login throttle,
counted against the key and the caller's own address. The cache is keyed by the key's
SHA-256, never the key, holds at most ``max_entries`` keys, and remembers a refusal
``refusal_ttl`` seconds so that a wrong key does not cost a call to identity per request.

Keys never seen before cost a call each, so exchanges are also limited per client address
(:class:`ExchangeLimit`): a bucket of exchanges a minute, and identity's own 429 (its
login throttle locked the address or the key out) remembered until its ``Retry-After``.
Past either, the caller gets the same 429 with ``Retry-After`` without identity being
asked. A key whose token is kept is not limited: its requests ask nobody.

All of this is per process, deliberately: what it remembers is a copy of decisions whose
truth is shared already (the keys and identity's login throttle, in identity's database and
Redis), and its purpose is to spare identity and Redis a round trip per request. Shared
through Redis it would cost the round trip it saves. A process learns each refusal or
throttle once for itself, so with ``n`` replicas identity is asked at most ``n`` times
where one would do.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import httpx
from pydantic import BaseModel, Field, ValidationError

from shared.auth.cache import LoadCache
from shared.errors import ServiceUnavailable, Unauthorized
from shared.metrics import API_KEY_EXCHANGES
from shared.throttle import LoginThrottled

__all__ = [
    "API_KEY_PREFIX",
    "EXCHANGE_PATH",
    "APIKeyExchange",
    "APIKeyRefused",
    "APIKeySource",
    "APIKeyToken",
    "APIKeyTokens",
    "EncodedKey",
    "ExchangeLimit",
    "IdentityKeySource",
]

API_KEY_PREFIX = "ZENKEY_"
EXCHANGE_PATH = "/internal/v1/api_key_tokens"
"""Identity's internal route: a :class:`APIKeyExchange` in, an :class:`APIKeyToken` out."""
# Far above an encoded key (~130 characters); a longer bearer is refused unread.
MAX_API_KEY_LENGTH = 1024


class EncodedKey(BaseModel):
    """What a ``ZENKEY_`` key carries: ``ZENKEY_`` + base64 of ``{"id": ..., "key": ...}``
    (the zenml client's ``APIKey.encode``)."""

    id: uuid.UUID
    key: str

    def encode(self) -> str:
        return API_KEY_PREFIX + base64.b64encode(self.model_dump_json().encode()).decode()

    @classmethod
    def decode(cls, encoded: str) -> EncodedKey | None:
        """The key's id and secret, or ``None`` when it is not an encoded key."""
        if len(encoded) > MAX_API_KEY_LENGTH:
            return None
        encoded = encoded.removeprefix(API_KEY_PREFIX)
        try:
            return cls.model_validate_json(base64.b64decode(encoded, validate=True))
        except (binascii.Error, ValueError, ValidationError):
            return None


class APIKeyRefused(Unauthorized):
    """The key is refused (401 ``CredentialsNotValid``, the API-key login's reasons).

    ``key_id`` is the id of the stored key the login named, when there is one: what a log
    line may say about the attempt (the rest of what was presented could be a secret).
    """

    def __init__(self, reason: str, *, key_id: uuid.UUID | None = None) -> None:
        super().__init__(f"Authentication error: {reason}")
        self.reason = reason
        self.key_id = key_id


class APIKeyExchange(BaseModel):
    """What a service sends identity: the key, and the address its caller came from (the
    login throttle counts a refusal against it)."""

    api_key: str = Field(max_length=MAX_API_KEY_LENGTH)
    client: str | None = Field(default=None, max_length=255)


class APIKeyToken(BaseModel):
    """Identity's answer: the token a login with the key gives and its lifetime in
    seconds, or why the key is refused (``refused``, the API-key login's reason). A
    refusal is an answer, not an error status: a 401 of the exchange means this service's
    own token was refused, which its HTTP auth then renews."""

    access_token: str | None = None
    expires_in: int = 0
    refused: str | None = None


class APIKeySource(Protocol):
    async def exchange(self, api_key: str, client: str | None) -> APIKeyToken:
        """The token of a login with ``api_key`` (an answer with ``access_token``).
        Raises :class:`APIKeyRefused` (the key is bad),
        :class:`~shared.throttle.LoginThrottled` (429) or
        :class:`~shared.errors.ServiceUnavailable` (cannot be told now)."""
        ...


class IdentityKeySource:
    """Asks identity's internal exchange over HTTP, authenticated as this service."""

    def __init__(self, http: httpx.AsyncClient, identity_url: str, auth: httpx.Auth) -> None:
        self._http = http
        self._url = identity_url.rstrip("/") + EXCHANGE_PATH
        self._auth = auth

    async def exchange(self, api_key: str, client: str | None) -> APIKeyToken:
        unavailable = "API keys cannot be checked right now."
        body = APIKeyExchange(api_key=api_key, client=client).model_dump()
        try:
            response = await self._http.post(self._url, json=body, auth=self._auth)
        except httpx.HTTPError as exc:
            raise ServiceUnavailable(unavailable) from exc
        if response.status_code == 429:
            retry_after = response.headers.get("retry-after", "")
            raise LoginThrottled(int(retry_after) if retry_after.isdigit() else 1)
        if response.status_code != 200:
            raise ServiceUnavailable(unavailable)
        try:
            answer = APIKeyToken.model_validate_json(response.content)
        except ValidationError as exc:
            raise ServiceUnavailable(unavailable) from exc
        if answer.refused is not None:
            raise APIKeyRefused(answer.refused)
        if answer.access_token is None:
            raise ServiceUnavailable(unavailable)
        return answer


@dataclass(frozen=True)
class _Exchanged:
    token: str | None
    reason: str | None
    """Why the key was refused, when ``token`` is ``None``."""


def key_digest(api_key: str) -> bytes:
    """What the cache knows a key by: its SHA-256 (a key has 256 random bits)."""
    return hashlib.sha256(api_key.encode()).digest()


@dataclass
class _Allowance:
    tokens: float
    at: float
    blocked_until: float = 0.0


class ExchangeLimit:
    """The exchanges each client address may start, in this process: ``per_minute``, in
    bursts of as many (a token bucket, full at first), and none while identity's 429 for
    it lasts (:meth:`block`). ``None`` is one address, that of callers without one. At
    most ``max_clients`` addresses are remembered (least recently seen dropped first)."""

    def __init__(
        self,
        per_minute: int,
        *,
        max_clients: int = 10000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_minute < 1:
            raise ValueError("per_minute must be at least 1")
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.max_clients = max_clients
        self._clock = clock
        self._clients: OrderedDict[str | None, _Allowance] = OrderedDict()

    def _allowance(self, client: str | None, now: float) -> _Allowance:
        allowance = self._clients.get(client)
        if allowance is None:
            allowance = self._clients[client] = _Allowance(self.capacity, now)
            while len(self._clients) > self.max_clients:
                self._clients.popitem(last=False)
        else:
            self._clients.move_to_end(client)
            refill = (now - allowance.at) * self.rate
            allowance.tokens = min(self.capacity, allowance.tokens + refill)
            allowance.at = now
        return allowance

    def admit(self, client: str | None) -> None:
        """Count one exchange for ``client``, or raise :class:`LoginThrottled` (429) with
        the seconds until it may start one."""
        now = self._clock()
        allowance = self._allowance(client, now)
        if allowance.blocked_until > now:
            wait = allowance.blocked_until - now
        elif allowance.tokens < 1:
            wait = (1 - allowance.tokens) / self.rate
        else:
            allowance.tokens -= 1
            return
        API_KEY_EXCHANGES.labels("limited").inc()
        raise LoginThrottled(max(1, math.ceil(wait)))

    def block(self, client: str | None, seconds: float) -> None:
        """No exchange for ``client`` for ``seconds`` (identity said to retry after)."""
        now = self._clock()
        allowance = self._allowance(client, now)
        allowance.blocked_until = max(allowance.blocked_until, now + seconds)


class APIKeyTokens:
    """Each key's token, exchanged once per process and kept until ``margin`` seconds
    before it expires (half its lifetime when shorter); a refusal is kept
    ``refusal_ttl`` seconds. At most ``max_entries`` keys (least recently used dropped
    first); requests presenting the same key at once share one exchange. Exchanges are
    started within ``limit`` (default: :class:`ExchangeLimit` of 30 a minute per
    address). ``clock`` (monotonic seconds) is injectable for tests."""

    def __init__(
        self,
        source: APIKeySource,
        *,
        max_entries: int = 10000,
        refusal_ttl: float = 10.0,
        margin: float = 30.0,
        limit: ExchangeLimit | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.source = source
        self.refusal_ttl = refusal_ttl
        self.margin = margin
        self.limit = limit or ExchangeLimit(30, clock=clock)
        self._cache: LoadCache[bytes, _Exchanged] = LoadCache(max_entries=max_entries, clock=clock)

    def __len__(self) -> int:
        return len(self._cache)

    async def token(self, api_key: str, client: str | None, *, refused: str | None = None) -> str:
        """The token for ``api_key``; a new one when none is kept, it is about to expire,
        or it is ``refused`` (the kept token the caller just found revoked).
        Raises :class:`APIKeyRefused` for a bad key, without asking identity when the key
        cannot even be decoded."""
        if EncodedKey.decode(api_key) is None:
            raise APIKeyRefused("error decoding API key")
        digest = key_digest(api_key)
        kept = self._cache.kept(digest)
        if kept is None or (refused is not None and kept.value.token == refused):
            if not self._cache.loading(digest):
                self.limit.admit(client)
            exchanged = await self._cache.load(digest, lambda: self._exchange(api_key, client))
        else:
            exchanged = kept.value
        if exchanged.token is None:
            raise APIKeyRefused(exchanged.reason or "error decoding API key")
        return exchanged.token

    async def _exchange(self, api_key: str, client: str | None) -> tuple[_Exchanged, float]:
        API_KEY_EXCHANGES.labels("asked").inc()
        try:
            issued = await self.source.exchange(api_key, client)
        except APIKeyRefused as exc:
            return _Exchanged(None, exc.reason), self.refusal_ttl
        except LoginThrottled as exc:
            self.limit.block(client, exc.retry_after)
            raise
        if issued.access_token is None:
            return _Exchanged(None, issued.refused), self.refusal_ttl
        lifetime = float(issued.expires_in)
        return _Exchanged(issued.access_token, None), max(lifetime - self.margin, lifetime / 2)
