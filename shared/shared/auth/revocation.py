"""The revocation list: tokens, subjects, devices and API keys that must no longer be
accepted.

Verification alone cannot take back a self-contained token, so every service also asks
Redis, on every authenticated request, whether the token was revoked. These entries can
revoke a token (all under ``<namespace>:revoked:``):

- ``jti:<jti>``: that one token (logout, API token revoked). Expires with the token:
  at ``exp`` plus :data:`EXPIRY_MARGIN` (longer than any verifier leeway), or after
  :data:`NO_EXPIRY_TTL` for tokens without ``exp``.
- ``subject:<sub>``: a cutoff (Unix seconds, with microseconds). Every token of that
  subject issued at or before it is revoked (user deactivated, password changed). No
  TTL: tokens without expiry may have been issued before it. ``deleted`` in its place
  revokes every token of the subject whenever it was issued (the account was deleted):
  a validly signed token of it, even one signed after the deletion with a stolen key, is
  refused without a lookup of the account. Cutoffs never replace it.
- ``device:<id>``: tokens carrying that ``device_id`` claim (device locked or deleted),
  until :meth:`RevocationList.restore_device`. No TTL.
- ``device-cutoff:<id>``: a cutoff like the subject's, for the tokens of one device
  (the device authorized again: what it held before must die, what it gets next must
  work). No TTL.
- ``api-key:<id>``: the tokens carrying that ``api_key_id`` claim (logins with a
  service account's API key, and the tokens minted from them), judged by their
  ``key_gen`` claim: ``-`` revokes them all (key deactivated or deleted); ``<gen> <t>``
  keeps those of generation ``gen`` and, until Unix time ``t`` (the rotation's grace
  window), of ``gen - 1``. No TTL.

The check runs on every authenticated request. It reads the entries with one ``MGET`` on a
:class:`~shared.redis_pipe.RedisPipe` of its own (redis-py's per-command machinery would
cost more than the rest of the check) and keeps what it read: the pipe's connection has
Redis's client-side caching on for ``<namespace>:revoked:`` (broadcast mode), so Redis
tells it of every change to any entry, from any client, before it acknowledges the change
to the client that made it. A kept entry is dropped when it changes, when the connection
is lost (until a new connection tracks again, every check asks Redis), and after
:data:`CACHE_MAX_AGE` in any case. So a revocation acknowledged to one service holds for
the next check on every service, as it did when every check asked Redis, and the checks
of a token already seen (nearly all of them) cost no round trip to Redis. When Redis
cannot be reached the check fails closed with :class:`~shared.errors.ServiceUnavailable`
(503): an unknown revocation state is never taken for "not revoked".
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar
from uuid import UUID

from redis.asyncio import Redis
from redis.exceptions import RedisError

from shared.auth.tokens import VerifiedToken
from shared.errors import ServiceUnavailable
from shared.redis import Keys
from shared.redis_pipe import RedisPipe

__all__ = ["RevocationList"]

CACHE_MAX_AGE = 30.0
"""Seconds an entry read from Redis is used for at most, even with no change told."""
CACHE_MAX_ENTRIES = 100_000
"""Entries kept at most (all are dropped when full: a token's next check reads again)."""

T = TypeVar("T")

DELETED = b"deleted"
"""The ``subject:`` entry of a deleted account (see the module)."""

EXPIRY_MARGIN = timedelta(minutes=5)
"""How long a revoked token's entry outlives its ``exp``; covers any verifier leeway."""

NO_EXPIRY_TTL = timedelta(days=400)
"""TTL of the entry for a revoked token without ``exp`` (a workload token).

Such tokens are also bound to a run, schedule or deployment that is checked on every
request, and revoking their subject or rotating the signing key also kills them; the
entry bounds the memory a stream of revocations can take rather than being the only
line of defence.
"""

# Raises the cutoff, never lowers it, in one atomic step: two revocations racing (say a
# deactivation and a password change) must leave the later cutoff in place.
_RAISE_CUTOFF = """
local current = redis.call('GET', KEYS[1])
-- A value that is not a number ("deleted") revokes everything already: it stays.
if (not current) or (tonumber(current) and tonumber(current) < tonumber(ARGV[1])) then
    redis.call('SET', KEYS[1], ARGV[1])
end
return 1
"""


def _device_part(device_id: str | UUID) -> str:
    # The claim and the caller may spell the same UUID differently (hex, upper case).
    try:
        return str(device_id if isinstance(device_id, UUID) else UUID(device_id))
    except ValueError:
        return str(device_id)


def _claim(token: VerifiedToken, name: str) -> str:
    """A string claim of ``token``, or ``""``."""
    value = token.claims.get(name)
    return value if isinstance(value, str) else ""


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


class RevocationList:
    """Revocations shared by all services through Redis."""

    def __init__(self, redis: Redis, keys: Keys, *, max_age: float = CACHE_MAX_AGE) -> None:
        self._redis = redis
        self._keys = keys
        self._raise_cutoff = redis.register_script(_RAISE_CUTOFF)
        self._pipe = RedisPipe(
            redis, tracking=[keys("revoked", "")], on_invalidate=self._invalidate
        )
        self.max_age = max_age
        self.reads = 0  # MGETs sent to Redis
        # key -> (value, read at); trusted only while the pipe tracks (see the module).
        self._kept: dict[str, tuple[Any, float]] = {}
        self._changes = 0  # changes told so far: a read that saw none since it began is kept

    async def aclose(self) -> None:
        """Close the check's connection to Redis."""
        await self._pipe.aclose()

    def _invalidate(self, keys: list[str] | None) -> None:
        self._changes += 1
        if keys is None:
            self._kept.clear()
        else:
            for key in keys:
                self._kept.pop(key, None)

    def _jti_key(self, jti: str) -> str:
        return self._keys("revoked", "jti", jti)

    def _subject_key(self, subject: str) -> str:
        return self._keys("revoked", "subject", subject)

    def _device_key(self, device_id: str | UUID) -> str:
        return self._keys("revoked", "device", _device_part(device_id))

    def _device_cutoff_key(self, device_id: str | UUID) -> str:
        return self._keys("revoked", "device-cutoff", _device_part(device_id))

    def _api_key_key(self, api_key_id: str | UUID) -> str:
        return self._keys("revoked", "api-key", _device_part(api_key_id))

    async def _call(self, operation: Callable[[], Awaitable[T]]) -> T:
        try:
            return await operation()
        except (RedisError, OSError) as exc:
            raise _unavailable() from exc

    async def revoke_token(self, jti: str, expires_at: datetime | None) -> None:
        """Revoke one token until it would have expired anyway."""
        if expires_at is None:
            ttl = NO_EXPIRY_TTL.total_seconds()
        else:
            ttl = (expires_at + EXPIRY_MARGIN - datetime.now(UTC)).total_seconds()
        if ttl <= 0:
            return  # Expired beyond every leeway: no verifier accepts it any more.
        key = self._jti_key(jti)
        await self._call(lambda: self._redis.set(key, b"1", ex=math.ceil(ttl)))

    async def revoke_subject(self, subject: str, *, before: datetime | None = None) -> None:
        """Revoke every token of ``subject`` issued at or before ``before`` (default now).

        Our signer writes ``iat`` with microseconds, so a token issued right after the
        cutoff (the new session after a password change) stays valid. A token whose
        ``iat`` has whole seconds only (another issuer) is revoked when it falls in the
        cutoff's second: the safe side of the ambiguity.
        """
        await self._set_cutoff(self._subject_key(subject), before)

    async def revoke_deleted_subject(self, subject: str) -> None:
        """Revoke every token of ``subject``, issued before or after now: the account is
        gone, and no token of it may stand again (ids are never reused)."""
        key = self._subject_key(subject)
        await self._call(lambda: self._redis.set(key, DELETED))

    async def revoke_device_before(
        self, device_id: str | UUID, *, before: datetime | None = None
    ) -> None:
        """Revoke the tokens of a device issued at or before ``before`` (default now).

        Unlike :meth:`revoke_device`, tokens issued afterwards (the device was authorized
        again) are accepted; :meth:`restore_device` does not undo it.
        """
        await self._set_cutoff(self._device_cutoff_key(device_id), before)

    async def _set_cutoff(self, key: str, before: datetime | None) -> None:
        if before is None:
            before = datetime.now(UTC)
        elif before.tzinfo is None:
            raise ValueError("before must be timezone-aware")
        cutoff = repr(before.timestamp())
        await self._call(lambda: self._raise_cutoff(keys=[key], args=[cutoff]))

    async def revoke_device(self, device_id: str | UUID) -> None:
        """Revoke every token whose ``device_id`` claim names this device."""
        key = self._device_key(device_id)
        await self._call(lambda: self._redis.set(key, b"1"))

    async def restore_device(self, device_id: str | UUID) -> None:
        """Undo :meth:`revoke_device` (the device was unlocked): its tokens work again."""
        key = self._device_key(device_id)
        await self._call(lambda: self._redis.delete(key))

    async def revoke_api_key(self, api_key_id: str | UUID) -> None:
        """Revoke every token whose ``api_key_id`` claim names this key (deactivated or
        deleted); :meth:`limit_api_key` replaces it when the key is active again."""
        key = self._api_key_key(api_key_id)
        await self._call(lambda: self._redis.set(key, b"-"))

    async def limit_api_key(
        self, api_key_id: str | UUID, generation: int, previous_until: datetime | None
    ) -> None:
        """Keep only the key's tokens of ``generation`` and, before ``previous_until``
        (a rotation's grace window), of the generation before it."""
        until = previous_until.timestamp() if previous_until is not None else 0.0
        key = self._api_key_key(api_key_id)
        value = f"{generation} {until!r}".encode()
        await self._call(lambda: self._redis.set(key, value))

    async def is_revoked(self, token: VerifiedToken, *, now: datetime | None = None) -> bool:
        """Whether any entry revokes ``token``; one ``MGET`` round trip. ``now`` (default
        the real time) judges an API key rotation's grace window.

        Raises :class:`~shared.errors.ServiceUnavailable` when Redis cannot answer.
        """
        keys = [self._jti_key(token.jti), self._subject_key(token.subject)]
        device_id = _claim(token, "device_id")
        if device_id:
            keys += [self._device_key(device_id), self._device_cutoff_key(device_id)]
        api_key_id = _claim(token, "api_key_id")
        if api_key_id:
            keys.append(self._api_key_key(api_key_id))
        values = self._read_kept(keys)
        if values is None:
            values = await self._read(keys)
        jti_entry, subject_cutoff, *rest = (_text(v) for v in values)
        if jti_entry is not None:
            return True
        cutoffs = [subject_cutoff]
        if device_id:
            device_entry, device_cutoff, *rest = rest
            if device_entry is not None:
                return True
            cutoffs.append(device_cutoff)
        if api_key_id and _api_key_refuses(token, rest[0], now or datetime.now(UTC)):
            return True
        return any(_issued_by(token, cutoff) for cutoff in cutoffs)

    def _read_kept(self, keys: list[str]) -> list[Any] | None:
        """The values of ``keys`` as kept, if all are and may be trusted."""
        if not self._pipe.tracking:
            return None
        kept = self._kept
        oldest = time.monotonic() - self.max_age
        values = []
        for key in keys:
            entry = kept.get(key)
            if entry is None or entry[1] < oldest:
                return None
            values.append(entry[0])
        return values

    async def _read(self, keys: list[str]) -> list[Any]:
        changes = self._changes
        self.reads += 1
        try:
            values: list[Any] = await self._pipe("MGET", *keys)
        except (RedisError, OSError) as exc:
            raise _unavailable() from exc
        # Kept only if no change was told since the read began: one told between the reply
        # and now may be about these keys, and dropping them came before keeping them.
        if changes == self._changes and self._pipe.tracking:
            kept = self._kept
            if len(kept) + len(keys) > CACHE_MAX_ENTRIES:
                kept.clear()
            now = time.monotonic()
            for key, value in zip(keys, values, strict=True):
                kept[key] = (value, now)
        return values


def _unavailable() -> ServiceUnavailable:
    return ServiceUnavailable("The token revocation list is unavailable; try again shortly.")


def _api_key_refuses(token: VerifiedToken, entry: str | None, now: datetime) -> bool:
    """Whether an ``api-key:`` entry (see the module) revokes ``token``."""
    if entry is None:
        return False
    generation = token.claims.get("key_gen")
    try:
        current, until = entry.split(" ")
        if not isinstance(generation, int) or isinstance(generation, bool):
            return True  # A key's token without its generation: the safe side.
        if generation == int(current):
            return False
        return generation != int(current) - 1 or now.timestamp() >= float(until)
    except ValueError:
        return True  # "-" (revoked) or an unreadable entry must not un-revoke anything.


def _issued_by(token: VerifiedToken, cutoff: str | None) -> bool:
    """Whether ``token`` was issued at or before ``cutoff`` (``None``: no cutoff; not a
    number, as ``deleted``: every token)."""
    if cutoff is None:
        return False
    try:
        return token.issued_at.timestamp() <= float(cutoff)
    except ValueError:
        return True  # An unreadable cutoff must not silently un-revoke anything.
