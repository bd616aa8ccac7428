"""Login throttling per account and per client address, shared through Redis.

A service counts every failed login against the account it named (whether or not such an
account exists, so the answers tell nothing about it) and against the client address,
under its own key namespace, in Redis that every replica shares:

- From the threshold-th consecutive failure on, the account or address is locked out for
  ``login_lockout_base`` doubled with every further failure, up to its maximum
  (``login_client_lockout_max``, long; ``login_account_lockout_max``, short). A login
  attempted meanwhile gets 429 with ``Retry-After``, without its secret being checked,
  and does not count (so a client retrying 429s does not lengthen its lockout).
- The address threshold is below the account one: one address guessing one password is
  stopped by its own lockout before the account's turns on; the account's lockout only
  bites an attacker spread over many addresses, and stays short.
- At ``login_account_failure_ceiling`` consecutive failures (a hard ceiling) the account
  stays locked until its failures are forgotten, ``login_failure_memory`` after the last,
  or an operator clears them (:meth:`LoginThrottle.clear`, with a password reset).
- A successful login clears the account's failures (not the address's, or one valid
  account would reset an attacker's budget) and marks the address as known to the account
  for ``login_known_client_memory``. The account's lockout does not hold against a known
  address (its own address lockout does): whatever an attacker does from elsewhere, the
  real user keeps logging in from where they did before.

Redis errors fail closed: 503, since without the counters guessing would be unlimited.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel, Field
from redis.asyncio import Redis
from redis.exceptions import RedisError

from shared.errors import HTTPDetailError, ServiceUnavailable
from shared.metrics import LOGIN_THROTTLES
from shared.redis import Keys

__all__ = ["LoginThrottle", "LoginThrottleSettings"]

T = TypeVar("T")

logger = logging.getLogger("platform.audit")

# KEYS: (failure count, lockout) per scope. ARGV: memory s, then per scope threshold,
# ceiling (0: none), base ms, max ms. Returns each scope's failure count.
_RECORD_FAILURE = """
local memory = tonumber(ARGV[1])
local counts = {}
for scope = 1, #KEYS / 2 do
    local failures_key, lockout_key = KEYS[2 * scope - 1], KEYS[2 * scope]
    local at = 4 * (scope - 1) + 1
    local threshold, ceiling = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
    local failures = redis.call('INCR', failures_key)
    redis.call('EXPIRE', failures_key, memory)
    if ceiling > 0 and failures >= ceiling then
        redis.call('SET', lockout_key, failures, 'EX', memory)
    elseif failures >= threshold then
        local delay = tonumber(ARGV[at + 3]) * 2 ^ math.min(failures - threshold, 40)
        delay = math.min(delay, tonumber(ARGV[at + 4]))
        redis.call('SET', lockout_key, failures, 'PX', math.floor(delay))
    end
    counts[scope] = failures
end
return counts
"""


class LoginThrottleSettings(BaseModel):
    """The policy's settings, mixed into a service's settings class (each service keeps
    its own values and environment prefix)."""

    login_client_failure_threshold: int = Field(default=10, ge=1)
    login_account_failure_threshold: int = Field(default=20, ge=1)
    login_account_failure_ceiling: int = Field(default=100, ge=1)
    login_lockout_base: timedelta = timedelta(seconds=2)
    login_client_lockout_max: timedelta = timedelta(hours=1)
    login_account_lockout_max: timedelta = timedelta(minutes=1)
    login_failure_memory: timedelta = timedelta(hours=24)
    login_known_client_memory: timedelta = timedelta(days=30)


class LoginThrottled(HTTPDetailError):
    """429 ``{"detail": "Too many failed login attempts. ..."}`` with ``Retry-After``."""

    def __init__(self, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(
            429,
            f"Too many failed login attempts. Try again in {retry_after} seconds.",
            headers={"Retry-After": str(retry_after)},
        )


def _ms(value: timedelta) -> int:
    return max(1, math.ceil(value.total_seconds() * 1000))


def _seconds(value: timedelta) -> int:
    return max(1, math.ceil(value.total_seconds()))


class LoginThrottle:
    """One service's throttle (see the module docstring).

    ``account`` is whatever the login names: a user name, or a credential's id with a
    prefix of the service's choosing; ``None`` when the attempt names nothing (it then
    counts against the address only). ``client`` is the client address, ``None`` when
    unknown.
    """

    def __init__(self, redis: Redis, keys: Keys, settings: LoginThrottleSettings) -> None:
        self._redis = redis
        self._keys = keys
        self._settings = settings
        self._record = redis.register_script(_RECORD_FAILURE)

    @staticmethod
    def _account(account: str) -> str:
        # Hashed: any text may be an account name, and keys should not carry it in clear.
        return hashlib.sha256(account.encode()).hexdigest()[:32]

    def failures_key(self, scope: str, name: str) -> str:
        """The failure count of ``scope`` ("account" or "client") ``name``."""
        return self._keys("login", "failures", scope, self._name(scope, name))

    def lockout_key(self, scope: str, name: str) -> str:
        return self._keys("login", "lockout", scope, self._name(scope, name))

    def _name(self, scope: str, name: str) -> str:
        return self._account(name) if scope == "account" else name

    def _known_key(self, account: str, client: str) -> str:
        return self._keys("login", "known", self._account(account), client)

    def _scopes(self, account: str | None, client: str | None) -> list[tuple[str, str]]:
        return [(s, n) for s, n in (("account", account), ("client", client)) if n is not None]

    async def _call(self, operation: Callable[[], Awaitable[T]]) -> T:
        try:
            return await operation()
        except (RedisError, OSError) as exc:
            raise ServiceUnavailable("Login is unavailable right now; try again shortly.") from exc

    async def check(self, account: str | None, client: str | None) -> None:
        """Raise :class:`LoginThrottled` while the address is locked out, or the account
        is and the address is not known to it."""
        scopes = self._scopes(account, client)
        known = None
        if account is not None and client is not None:
            known = self._known_key(account, client)

        async def remaining() -> list[int]:
            async with self._redis.pipeline(transaction=False) as pipe:
                for scope, name in scopes:
                    pipe.pttl(self.lockout_key(scope, name))
                if known is not None:
                    pipe.exists(known)
                return list(await pipe.execute())

        answers = await self._call(remaining)
        waits = {scope: wait for (scope, _), wait in zip(scopes, answers, strict=False)}
        if known is not None and answers[-1]:
            del waits["account"]
        longest = max(waits.values(), default=0)
        if longest > 0:
            LOGIN_THROTTLES.inc()
            raise LoginThrottled(math.ceil(longest / 1000))

    async def failed(self, account: str | None, client: str | None) -> None:
        settings = self._settings
        limits = {
            "account": (
                settings.login_account_failure_threshold,
                settings.login_account_failure_ceiling,
                settings.login_account_lockout_max,
            ),
            "client": (
                settings.login_client_failure_threshold,
                0,
                settings.login_client_lockout_max,
            ),
        }
        scopes = self._scopes(account, client)
        if not scopes:
            return
        keys: list[str] = []
        args: list[int] = [_seconds(settings.login_failure_memory)]
        for scope, name in scopes:
            threshold, ceiling, longest = limits[scope]
            keys += [self.failures_key(scope, name), self.lockout_key(scope, name)]
            args += [threshold, ceiling, _ms(settings.login_lockout_base), _ms(longest)]

        async def record() -> Any:
            return await self._record(keys=keys, args=args)

        counts = await self._call(record)
        for (scope, _), count in zip(scopes, counts, strict=True):
            if int(count) >= limits[scope][0]:
                logger.warning(
                    "login lockout",
                    extra={"scope": scope, "failures": int(count), "client": client},
                )

    def _account_keys(self, account: str) -> tuple[str, str]:
        return self.failures_key("account", account), self.lockout_key("account", account)

    async def succeeded(self, account: str, client: str | None) -> None:
        """Forget the account's failures; remember ``client`` as an address it logs in from."""

        async def forget() -> None:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.delete(*self._account_keys(account))
                if client is not None:
                    memory = _seconds(self._settings.login_known_client_memory)
                    pipe.set(self._known_key(account, client), b"1", ex=memory)
                await pipe.execute()

        await self._call(forget)

    async def clear(self, account: str) -> None:
        """Forget the account's failures and lift its lockout, the ceiling's included, as
        a successful login would (the addresses' lockouts stay): for an operator who has
        just given the account a new password. Redis errors are raised as they are."""
        await self._redis.delete(*self._account_keys(account))
