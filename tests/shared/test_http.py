"""Service-to-service HTTP: bounded retries, request-id propagation, service tokens.

The upstream is an ``httpx.MockTransport``: it stands for another process."""

from __future__ import annotations

import asyncio
import ssl
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from urllib.parse import parse_qs

import httpx
import pytest

from shared import http
from shared.http import RetryTransport, ServiceTokenAuth, create_http_client
from shared.logging import request_id_var
from shared.settings import ServiceSettings

Handler = Callable[[httpx.Request], httpx.Response]


class Upstream:
    """Answers with a scripted sequence of statuses (or raises ConnectError for None)."""

    def __init__(self, *answers: int | None) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if answer is None:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(answer, json={"x_request_id": request.headers.get("x-request-id")})


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def retrying_client(upstream: Upstream, sleeps: Sleeps, retries: int = 2) -> httpx.AsyncClient:
    transport = RetryTransport(
        httpx.MockTransport(upstream), retries=retries, backoff=0.5, sleep=sleeps
    )
    return httpx.AsyncClient(transport=transport, base_url="http://upstream.test")


def settings(**overrides: object) -> ServiceSettings:
    return ServiceSettings(
        redis_namespace=f"test-{uuid.uuid4().hex[:12]}",
        jwks_url="http://127.0.0.1:9/.well-known/jwks.json",
        **overrides,  # type: ignore[arg-type]
    )


async def test_get_is_retried_on_503_until_it_succeeds():
    upstream, sleeps = Upstream(503, 503, 200), Sleeps()
    async with retrying_client(upstream, sleeps) as client:
        response = await client.get("/thing")
    assert response.status_code == 200
    assert len(upstream.requests) == 3


async def test_get_returns_the_last_503_when_retries_run_out():
    upstream, sleeps = Upstream(503), Sleeps()
    async with retrying_client(upstream, sleeps, retries=2) as client:
        response = await client.get("/thing")
    assert response.status_code == 503
    assert len(upstream.requests) == 3


async def test_get_is_retried_on_connect_error_then_raises():
    upstream, sleeps = Upstream(None), Sleeps()
    async with retrying_client(upstream, sleeps, retries=2) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get("/thing")
    assert len(upstream.requests) == 3


async def test_get_recovers_after_a_connect_error():
    upstream, sleeps = Upstream(None, 200), Sleeps()
    async with retrying_client(upstream, sleeps) as client:
        response = await client.get("/thing")
    assert response.status_code == 200
    assert len(upstream.requests) == 2


@pytest.mark.parametrize("answer", [503, None])
async def test_post_is_never_retried(answer):
    upstream, sleeps = Upstream(answer), Sleeps()
    async with retrying_client(upstream, sleeps) as client:
        if answer is None:
            with pytest.raises(httpx.ConnectError):
                await client.post("/thing", json={})
        else:
            assert (await client.post("/thing", json={})).status_code == 503
    assert len(upstream.requests) == 1
    assert sleeps.delays == []


async def test_client_errors_are_not_retried():
    upstream, sleeps = Upstream(404), Sleeps()
    async with retrying_client(upstream, sleeps) as client:
        assert (await client.get("/thing")).status_code == 404
    assert len(upstream.requests) == 1


async def test_backoff_doubles_through_the_injected_sleep():
    upstream, sleeps = Upstream(503), Sleeps()
    async with retrying_client(upstream, sleeps, retries=3) as client:
        await client.get("/thing")
    assert sleeps.delays == [0.5, 1.0, 2.0]


async def test_create_http_client_propagates_the_current_request_id():
    upstream = Upstream(200)
    token = request_id_var.set("abcd1234")
    try:
        async with create_http_client(
            settings(), transport=httpx.MockTransport(upstream)
        ) as client:
            response = await client.get("http://upstream.test/x")
    finally:
        request_id_var.reset(token)
    assert response.json() == {"x_request_id": "abcd1234"}


async def test_create_http_client_keeps_an_explicit_request_id():
    upstream = Upstream(200)
    token = request_id_var.set("abcd1234")
    try:
        async with create_http_client(
            settings(), transport=httpx.MockTransport(upstream)
        ) as client:
            response = await client.get("http://upstream.test/x", headers={"X-Request-ID": "mine"})
    finally:
        request_id_var.reset(token)
    assert response.json() == {"x_request_id": "mine"}


async def test_create_http_client_sends_no_request_id_outside_a_request():
    upstream = Upstream(200)
    async with create_http_client(settings(), transport=httpx.MockTransport(upstream)) as client:
        response = await client.get("http://upstream.test/x")
    assert response.json() == {"x_request_id": None}


async def test_create_http_client_retries_as_many_times_as_the_settings_say():
    upstream = Upstream(None, None, 200)
    async with create_http_client(
        settings(http_retries=2), transport=httpx.MockTransport(upstream)
    ) as client:
        response = await client.get("http://upstream.test/x")
    assert response.status_code == 200
    assert len(upstream.requests) == 3


class Identity:
    """A token endpoint issuing ``t1``, ``t2`` … and an API accepting ``valid`` tokens."""

    def __init__(self, *, valid: set[str] | None = None, expires_in: int = 3600) -> None:
        self.valid = valid
        self.expires_in = expires_in
        self.token_requests: list[httpx.Request] = []
        self.api_requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/login":
            self.token_requests.append(request)
            token = f"t{len(self.token_requests)}"
            return httpx.Response(
                200,
                json={
                    "access_token": token,
                    "token_type": "bearer",
                    "expires_in": self.expires_in,
                },
            )
        self.api_requests.append(request)
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        if self.valid is not None and bearer not in self.valid:
            return httpx.Response(401, json={"detail": ["CredentialsNotValid", "expired"]})
        return httpx.Response(200, json={"token": bearer})


@asynccontextmanager
async def token_auth_client(
    identity: Identity, *, latency: float = 0.0
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of ``identity``'s API with its service token; each answer takes
    ``latency`` seconds, so that calls made together are in flight together."""

    async def answer(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(latency)
        return identity(request)

    transport = httpx.MockTransport(answer)
    async with httpx.AsyncClient(transport=transport, base_url="http://identity.test") as tokens:
        auth = ServiceTokenAuth(tokens, client_id="tracking", client_secret="s3cret")
        async with httpx.AsyncClient(
            transport=transport, base_url="http://api.test", auth=auth
        ) as client:
            yield client


async def test_service_token_is_fetched_once_and_cached():
    identity = Identity()
    async with token_auth_client(identity) as client:
        first = await client.get("/a")
        second = await client.get("/b")
    assert first.json() == second.json() == {"token": "t1"}
    assert len(identity.token_requests) == 1


async def test_service_token_posts_a_client_credentials_form():
    identity = Identity()
    async with token_auth_client(identity) as client:
        await client.get("/a")
    [request] = identity.token_requests
    assert request.method == "POST"
    assert request.url == "http://identity.test/api/v1/login"
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert parse_qs(request.content.decode()) == {
        "grant_type": ["client_credentials"],
        "client_id": ["tracking"],
        "client_secret": ["s3cret"],
    }


async def test_service_token_is_refreshed_once_on_401():
    identity = Identity(valid={"t2"})
    async with token_auth_client(identity) as client:
        response = await client.get("/a")
    assert response.status_code == 200
    assert response.json() == {"token": "t2"}
    assert len(identity.token_requests) == 2
    assert len(identity.api_requests) == 2


async def test_service_token_refresh_is_not_repeated_when_401_persists():
    identity = Identity(valid=set())
    async with token_auth_client(identity) as client:
        response = await client.get("/a")
    assert response.status_code == 401
    assert len(identity.token_requests) == 2
    assert len(identity.api_requests) == 2


async def test_service_token_failure_raises_instead_of_sending_no_token():
    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": "invalid_client"})

    transport = httpx.MockTransport(refuse)
    async with httpx.AsyncClient(transport=transport, base_url="http://identity.test") as tokens:
        auth = ServiceTokenAuth(tokens, client_id="tracking", client_secret="wrong")
        async with httpx.AsyncClient(
            transport=transport, base_url="http://api.test", auth=auth
        ) as client:
            with pytest.raises(httpx.HTTPStatusError):
                await client.get("/a")


async def test_calls_refused_at_once_share_one_new_service_token():
    """A burst of calls refused together logs in once more, not once per call."""
    identity = Identity(valid={"t2"})
    async with token_auth_client(identity, latency=0.01) as client:
        responses = await asyncio.gather(*(client.get(f"/call/{n}") for n in range(10)))
    assert [r.status_code for r in responses] == [200] * 10
    assert len(identity.token_requests) == 2


async def test_a_forgotten_service_token_is_replaced_on_the_next_call():
    identity = Identity()
    async with token_auth_client(identity) as client:
        auth = client.auth
        assert isinstance(auth, ServiceTokenAuth)
        assert (await client.get("/a")).json() == {"token": "t1"}
        auth.forget("t1")
        assert (await client.get("/b")).json() == {"token": "t2"}
        auth.forget("t1")  # no longer the cached one: kept
        assert (await client.get("/c")).json() == {"token": "t2"}
    assert len(identity.token_requests) == 2


def test_clients_share_one_tls_context_that_verifies_certificates(monkeypatch):
    given: list[object] = []

    class Recording(httpx.AsyncHTTPTransport):
        def __init__(self, **options: object) -> None:
            given.append(options.get("verify"))
            super().__init__(**options)  # type: ignore[arg-type]

    monkeypatch.setattr(httpx, "AsyncHTTPTransport", Recording)
    create_http_client(settings())
    create_http_client(settings())
    context = http._tls_context()
    assert given == [context, context]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0  # the roots are loaded
