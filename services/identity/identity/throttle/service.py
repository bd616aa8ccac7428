"""Login throttling per account and per client address, shared through Redis.

Every failed password login counts against the account name (whether or not such an
account exists, so the answers tell nothing about it) and against the client address.
From the threshold-th consecutive failure on, the account or address is locked out for
``login_lockout_base`` doubled with every further failure, up to ``login_lockout_max``;
a login attempted meanwhile gets 429 with ``Retry-After``, without its password being
checked. Failures are forgotten ``login_failure_memory`` after the last one; a
successful login clears the account's count (not the address's, or one valid account
would reset an attacker's budget).
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from redis.asyncio import Redis
from redis.exceptions import RedisError

from identity.settings import Settings
from shared.errors import HTTPDetailError, ServiceUnavailable
from shared.redis import Keys

T = TypeVar("T")

logger = logging.getLogger("platform.audit")

# KEYS: failure count, lockout. ARGV: threshold, base ms, max ms, memory s.
_RECORD_FAILURE = """
local failures = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[4])
local threshold = tonumber(ARGV[1])
if failures >= threshold then
    local delay = tonumber(ARGV[2]) * 2 ^ math.min(failures - threshold, 40)
    delay = math.min(delay, tonumber(ARGV[3]))
    redis.call('SET', KEYS[2], failures, 'PX', math.floor(delay))
end
return failures
"""


class LoginThrottled(HTTPDetailError):
    def __init__(self, retry_after: int) -> None:
        super().__init__(
            429,
            f"Too many failed login attempts. Try again in {retry_after} seconds.",
            headers={"Retry-After": str(retry_after)},
        )


def _ms(settings_value: float) -> int:
    return max(1, math.ceil(settings_value * 1000))


class LoginThrottle:
    def __init__(self, redis: Redis, keys: Keys, settings: Settings) -> None:
        self._redis = redis
        self._keys = keys
        self._settings = settings
        self._record = redis.register_script(_RECORD_FAILURE)

    def _account(self, username: str) -> str:
        # Hashed: any text may be a user name, and keys should not carry it in clear.
        return hashlib.sha256(username.encode()).hexdigest()[:32]

    def _pairs(self, username: str, client: str | None) -> list[tuple[str, str, int]]:
        """(failure key, lockout key, threshold) of the account and of the address."""
        account = self._account(username)
        pairs = [
            (
                self._keys("login", "failures", "account", account),
                self._keys("login", "lockout", "account", account),
                self._settings.login_account_failure_threshold,
            )
        ]
        if client:
            pairs.append(
                (
                    self._keys("login", "failures", "client", client),
                    self._keys("login", "lockout", "client", client),
                    self._settings.login_client_failure_threshold,
                )
            )
        return pairs

    async def _call(self, operation: Callable[[], Awaitable[T]]) -> T:
        try:
            return await operation()
        except (RedisError, OSError) as exc:
            # Fail closed: without the counters, password guessing would be unlimited.
            raise ServiceUnavailable("Login is unavailable right now; try again shortly.") from exc

    async def check(self, username: str, client: str | None) -> None:
        """Raise :class:`LoginThrottled` while the account or the address is locked out."""
        lockouts = [lockout for _, lockout, _ in self._pairs(username, client)]

        async def remaining() -> list[int]:
            async with self._redis.pipeline(transaction=False) as pipe:
                for key in lockouts:
                    pipe.pttl(key)
                return list(await pipe.execute())

        longest = max(await self._call(remaining))
        if longest > 0:
            raise LoginThrottled(math.ceil(longest / 1000))

    async def failed(self, username: str, client: str | None) -> None:
        settings = self._settings
        for failures, lockout, threshold in self._pairs(username, client):
            args: list[int] = [
                threshold,
                _ms(settings.login_lockout_base.total_seconds()),
                _ms(settings.login_lockout_max.total_seconds()),
                max(1, math.ceil(settings.login_failure_memory.total_seconds())),
            ]
            count = await self._call(self._recorder([failures, lockout], args))
            if int(count) >= threshold:
                which = "account" if failures.endswith(self._account(username)) else "client"
                logger.warning(
                    "login lockout",
                    extra={"scope": which, "failures": int(count), "client": client},
                )

    def _recorder(self, keys: list[str], args: list[int]) -> Callable[[], Awaitable[Any]]:
        async def record() -> Any:
            return await self._record(keys=keys, args=args)

        return record

    async def succeeded(self, username: str) -> None:
        failures, lockout, _ = self._pairs(username, None)[0]
        await self._call(lambda: self._redis.delete(failures, lockout))
