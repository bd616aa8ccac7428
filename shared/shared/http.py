"""The ``httpx.AsyncClient`` factory for service-to-service calls.

Clients made here have connect/read timeouts, retry idempotent requests a bounded number
of times on connection errors and 502/503/504 (with a short backoff), and carry the
current request's ``X-Request-ID`` and, while tracing is on, a ``traceparent`` (each call
is a client span, its tries included: :mod:`shared.tracing`). Tests inject
``httpx.MockTransport`` or an ``ASGITransport`` through ``transport``.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
from collections.abc import Callable
from typing import Any

import httpx

from shared import tracing
from shared.logging import request_id_var
from shared.settings import ServiceSettings

__all__ = ["CachedTokenAuth", "RetryTransport", "create_http_client", "service_auth"]

RETRY_STATUSES = frozenset({502, 503, 504})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


class RetryTransport(httpx.AsyncBaseTransport):
    """Retry idempotent requests on transport errors and gateway failures."""

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        *,
        retries: int,
        backoff: float = 0.1,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.inner = inner
        self.retries = retries
        self.backoff = backoff
        self.sleep = sleep

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if tracing.tracer is None:
            return await self._send(request)
        url = str(request.url.copy_with(query=None, fragment=None))  # a query may hold a secret
        with tracing.client_span(request.method, url, request.headers) as span:
            response = await self._send(request)
            span.set_attribute("http.response.status_code", response.status_code)
            return response

    async def _send(self, request: httpx.Request) -> httpx.Response:
        attempts = self.retries + 1 if request.method in IDEMPOTENT_METHODS else 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                response = await self.inner.handle_async_request(request)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError):
                if last:
                    raise
            else:
                if response.status_code not in RETRY_STATUSES or last:
                    return response
                await response.aclose()
            await self.sleep(self.backoff * (2**attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        await self.inner.aclose()


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The one TLS context of this process's outgoing clients, as httpx makes it by default
    (the certifi roots, or ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when set). Loading the roots
    costs ~15 ms of CPU; a context per client paid it for every app start."""
    return httpx.create_ssl_context()


async def _propagate_request_id(request: httpx.Request) -> None:
    request_id = request_id_var.get()
    if request_id and "x-request-id" not in request.headers:
        request.headers["X-Request-ID"] = request_id


def create_http_client(
    settings: ServiceSettings,
    *,
    base_url: str = "",
    transport: httpx.AsyncBaseTransport | None = None,
    auth: httpx.Auth | None = None,
) -> httpx.AsyncClient:
    """A client with the service's timeouts, bounded retries and request-id propagation."""
    timeout = httpx.Timeout(
        settings.http_timeout.total_seconds(),
        connect=settings.http_connect_timeout.total_seconds(),
    )
    inner = transport or httpx.AsyncHTTPTransport(verify=_tls_context())
    return httpx.AsyncClient(
        base_url=base_url,
        timeout=timeout,
        transport=RetryTransport(inner, retries=settings.http_retries),
        event_hooks={"request": [_propagate_request_id]},
        auth=auth,
        follow_redirects=False,
    )


class CachedTokenAuth(httpx.Auth):
    """Authenticate outgoing calls with a bearer token that a subclass obtains.

    The token is cached until shortly before it expires; a 401 answer drops it and the
    request is retried once with a fresh one. Calls refused at once share one new token
    (one login, not one per call). Subclasses implement :meth:`fetch`.
    """

    requires_response_body = False

    def __init__(self) -> None:
        self._token: str | None = None
        self._expires_at = 0.0
        self._lock = asyncio.Lock()

    async def fetch(self) -> tuple[str, float]:
        """A new token and its lifetime in seconds."""
        raise NotImplementedError

    async def token(self, *, refused: str | None = None) -> str:
        """The cached token, or a new one when there is none, it is about to expire, or
        it is ``refused`` (a token a call was just refused with; a new token that another
        call obtained meanwhile is kept)."""
        async with self._lock:
            if (
                self._token is None
                or self._token == refused
                or time.monotonic() >= self._expires_at
            ):
                token, lifetime = await self.fetch()
                self._token = token
                self._expires_at = time.monotonic() + max(lifetime - 30, lifetime / 2)
            return self._token

    def forget(self, token: str) -> None:
        """Drop ``token`` if it is the cached one, so that the next call gets a new token
        (a caller that was refused with it, whatever the answer's status)."""
        if self._token == token:
            self._token = None

    async def async_auth_flow(self, request: httpx.Request) -> Any:
        sent = await self.token()
        request.headers["Authorization"] = f"Bearer {sent}"
        response = yield request
        if response.status_code == 401:
            request.headers["Authorization"] = f"Bearer {await self.token(refused=sent)}"
            yield request


class ServiceTokenAuth(CachedTokenAuth):
    """Authenticate outgoing calls with a token identity issues to this service, from
    its OAuth2 client-credentials grant."""

    def __init__(
        self,
        token_client: httpx.AsyncClient,
        *,
        client_id: str,
        client_secret: str,
        token_path: str = "/api/v1/login",
    ) -> None:
        super().__init__()
        self._client = token_client
        self._client_id = client_id
        self._client_secret = client_secret
        self._token_path = token_path

    async def fetch(self) -> tuple[str, float]:
        response = await self._client.post(
            self._token_path,
            data={
                "grant_type": "client_credentials",
                "client_id": self._client_id,
                "client_secret": self._client_secret,
            },
        )
        response.raise_for_status()
        payload = response.json()
        return str(payload["access_token"]), float(payload.get("expires_in") or 300)


def service_auth(settings: ServiceSettings, http: httpx.AsyncClient) -> ServiceTokenAuth | None:
    """The service's client-credentials auth against ``settings.identity_url``; ``None``
    when the service has no credentials configured."""
    if settings.service_client_id is None or settings.service_client_secret is None:
        return None
    return ServiceTokenAuth(
        http,
        client_id=settings.service_client_id,
        client_secret=settings.service_client_secret.get_secret_value(),
        token_path=settings.identity_url.rstrip("/") + "/api/v1/login",
    )
