"""The worker's bearer: a worker token, renewed with the account's API key shortly before
it expires and whenever a request is answered 401 (then the request is sent once more)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncGenerator, Callable

import httpx

from agent_cli.client import ApiClient
from agent_cli.output import CliError

RenewHook = Callable[[str, dt.datetime], None]
# Renew when this share of the token's life is left (at least a second before expiry).
RENEW_AT_REMAINING = 0.2
RETRY_AFTER_FAILURE = 5.0


def _expiry(value: str) -> dt.datetime:
    parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


class WorkerToken(httpx.Auth):
    def __init__(
        self,
        account: ApiClient,
        worker_id: str,
        token: str,
        expires_at: str,
        on_renew: RenewHook,
    ) -> None:
        self.account = account
        self.worker_id = worker_id
        self.on_renew = on_renew
        self._lock = asyncio.Lock()
        self._set(token, expires_at)

    def _set(self, token: str, expires_at: str) -> None:
        self.token = token
        self.expires_at = _expiry(expires_at)
        self.issued_at = dt.datetime.now(dt.UTC)

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        sent = self.token
        request.headers["Authorization"] = f"Bearer {sent}"
        response = yield request
        if response.status_code == 401:
            await self.renew("401", stale=sent)
            request.headers["Authorization"] = f"Bearer {self.token}"
            yield request

    async def renew(self, reason: str, *, stale: str | None = None) -> None:
        """A new worker token (unless another request renewed ``stale`` meanwhile)."""
        async with self._lock:
            if stale is not None and self.token != stale:
                return
            issued = await self.account.renew_worker_token(self.worker_id)
            self._set(issued["token"], issued["token_expires_at"])
            self.on_renew(reason, self.expires_at)

    def seconds_to_renewal(self) -> float:
        lifetime = (self.expires_at - self.issued_at).total_seconds()
        left = (self.expires_at - dt.datetime.now(dt.UTC)).total_seconds()
        return max(0.0, left - max(1.0, lifetime * RENEW_AT_REMAINING))

    async def keep_fresh(self) -> None:
        """Renew before expiry, forever (until cancelled); failures are retried."""
        while True:
            await asyncio.sleep(self.seconds_to_renewal())
            try:
                await self.renew("expiry")
            except CliError:
                await asyncio.sleep(RETRY_AFTER_FAILURE)
