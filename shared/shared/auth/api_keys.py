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
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import httpx
from pydantic import BaseModel, Field, ValidationError

from shared.auth.cache import LoadCache
from shared.errors import ServiceUnavailable, Unauthorized
from shared.throttle import LoginThrottled

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


class APIKeyTokens:
    """Each key's token, exchanged once per process and kept until ``margin`` seconds
    before it expires (half its lifetime when shorter); a refusal is kept
    ``refusal_ttl`` seconds. At most ``max_entries`` keys (least recently used dropped
    first); requests presenting the same key at once share one exchange. ``clock``
    (monotonic seconds) is injectable for tests."""

    def __init__(
        self,
        source: APIKeySource,
        *,
        max_entries: int = 10000,
        refusal_ttl: float = 10.0,
        margin: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.source = source
        self.refusal_ttl = refusal_ttl
        self.margin = margin
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
            exchanged = await self._cache.load(digest, lambda: self._exchange(api_key, client))
        else:
            exchanged = kept.value
        if exchanged.token is None:
            raise APIKeyRefused(exchanged.reason or "error decoding API key")
        return exchanged.token

    async def _exchange(self, api_key: str, client: str | None) -> tuple[_Exchanged, float]:
        try:
            issued = await self.source.exchange(api_key, client)
        except APIKeyRefused as exc:
            return _Exchanged(None, exc.reason), self.refusal_ttl
        if issued.access_token is None:
            return _Exchanged(None, issued.refused), self.refusal_ttl
        lifetime = float(issued.expires_in)
        return _Exchanged(issued.access_token, None), max(lifetime - self.margin, lifetime / 2)
