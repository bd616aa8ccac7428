"""The JWKS client: caching, refetch on unknown kid, rate limit, rotation, outages.

Identity's JWKS endpoint is faked with ``httpx.MockTransport`` (the outside boundary);
time is a settable clock. The last tests go through a service app built by
``create_service_app``, whose HTTP client reaches that fake through its transport.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shared.app import create_service_app
from shared.auth import (
    InvalidToken,
    JWKSClient,
    KeysUnavailable,
    StaticKeySource,
    TokenSigner,
    TokenVerifier,
    generate_signing_key,
    parse_jwks,
    public_jwk,
    require_principal,
)
from shared.responses import ErrorStyle
from shared.settings import ServiceSettings
from tests.shared.auth.conftest import Clock
from tests.support.asgi import client_for

URL = "http://identity.test/.well-known/jwks.json"
TTL = 600.0
MIN_REFRESH = 5.0


class FakeIdentity:
    """Serves a JWKS that tests edit, and counts the requests."""

    def __init__(self) -> None:
        self.signers: dict[str, TokenSigner] = {}
        self.extra_keys: list[Any] = []
        self.calls = 0
        self.failure: str | None = None
        # With ``held``, a request waits for it (lookups meanwhile overlap the fetch);
        # ``fetching`` tells that a request has arrived.
        self.held: asyncio.Event | None = None
        self.fetching = asyncio.Event()

    def add_key(self, kid: str) -> TokenSigner:
        signer = TokenSigner(generate_signing_key(), kid=kid, issuer="iss")
        self.signers[kid] = signer
        return signer

    def token(self, kid: str) -> str:
        token, _ = self.signers[kid].issue(
            subject="alice", kind="access", audience="aud", lifetime=timedelta(hours=1)
        )
        return token

    async def handle(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        self.fetching.set()
        if self.held is not None:
            await self.held.wait()
        if self.failure == "connect":
            raise httpx.ConnectError("connection refused", request=request)
        if self.failure == "timeout":
            raise httpx.ReadTimeout("timed out", request=request)
        if self.failure == "status":
            return httpx.Response(503, json={"detail": "down"})
        if self.failure == "body":
            return httpx.Response(200, text="<html>gateway</html>")
        keys = [signer.public_jwk() for signer in self.signers.values()] + self.extra_keys
        return httpx.Response(200, json={"keys": keys})


@pytest.fixture
def identity() -> FakeIdentity:
    identity = FakeIdentity()
    identity.add_key("a")
    return identity


@pytest.fixture
async def client(identity: FakeIdentity, clock: Clock) -> AsyncIterator[JWKSClient]:
    async with httpx.AsyncClient(transport=httpx.MockTransport(identity.handle)) as http:
        yield JWKSClient(http, URL, ttl=TTL, min_refresh_interval=MIN_REFRESH, clock=clock)


@pytest.fixture
def verifier(client: JWKSClient) -> TokenVerifier:
    # No verified-token cache: these tests follow the keys through the JWKS client alone.
    return TokenVerifier(client, issuer="iss", audience="aud", cache_ttl=0)


async def test_jwks_is_cached_for_its_ttl(
    client: JWKSClient, identity: FakeIdentity, clock: Clock
) -> None:
    assert await client.get("a") is not None
    clock.advance(TTL - 1)
    assert await client.get("a") is not None
    assert identity.calls == 1

    clock.advance(1)
    assert await client.get("a") is not None
    assert identity.calls == 2


async def test_unknown_kid_triggers_a_refetch(
    client: JWKSClient, identity: FakeIdentity, clock: Clock
) -> None:
    await client.get("a")
    identity.add_key("b")
    clock.advance(MIN_REFRESH)

    key = await client.get("b")

    assert key is not None
    assert key.key_id == "b"
    assert identity.calls == 2


async def test_unknown_kid_refetch_is_rate_limited(
    client: JWKSClient, identity: FakeIdentity, clock: Clock
) -> None:
    await client.get("a")
    for n in range(20):
        assert await client.get(f"random-{n}") is None
    assert identity.calls == 1

    clock.advance(MIN_REFRESH)
    assert await client.get("random-x") is None
    assert await client.get("random-y") is None
    assert identity.calls == 2


async def test_concurrent_misses_share_one_fetch(
    client: JWKSClient, identity: FakeIdentity
) -> None:
    identity.held = asyncio.Event()

    lookups = [asyncio.create_task(client.get("a")) for _ in range(25)]
    await identity.fetching.wait()
    identity.held.set()
    keys = await asyncio.gather(*lookups)

    assert all(key is not None for key in keys)
    assert identity.calls == 1


async def test_rotated_in_key_verifies_alongside_the_old_one(
    verifier: TokenVerifier, identity: FakeIdentity, clock: Clock
) -> None:
    old_token = identity.token("a")
    await verifier.verify(old_token, kinds={"access"})
    identity.add_key("b")
    new_token = identity.token("b")
    clock.advance(MIN_REFRESH)

    assert (await verifier.verify(new_token, kinds={"access"})).key_id == "b"
    assert (await verifier.verify(old_token, kinds={"access"})).key_id == "a"


async def test_removed_key_stops_verifying_after_the_next_refresh(
    verifier: TokenVerifier, identity: FakeIdentity, clock: Clock
) -> None:
    old_token = identity.token("a")
    await verifier.verify(old_token, kinds={"access"})
    identity.add_key("b")
    del identity.signers["a"]
    # Until the cache expires the old key still verifies...
    await verifier.verify(old_token, kinds={"access"})

    clock.advance(TTL)

    with pytest.raises(InvalidToken, match="unknown key"):
        await verifier.verify(old_token, kinds={"access"})
    await verifier.verify(identity.token("b"), kinds={"access"})


@pytest.mark.parametrize("failure", ["connect", "status", "body"])
async def test_failed_refresh_keeps_the_cached_keys(
    client: JWKSClient,
    identity: FakeIdentity,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
    failure: str,
) -> None:
    await client.get("a")
    identity.failure = failure
    clock.advance(TTL)

    with caplog.at_level(logging.WARNING, logger="shared.auth.jwks"):
        key = await client.get("a")

    assert key is not None
    assert identity.calls == 2
    assert "fetching the JWKS" in caplog.text
    assert "keeping 1 cached keys" in caplog.text


async def test_failed_refresh_is_retried_no_sooner_than_the_min_interval(
    client: JWKSClient, identity: FakeIdentity, clock: Clock
) -> None:
    await client.get("a")
    identity.failure = "status"
    clock.advance(TTL)
    await client.get("a")
    await client.get("a")
    assert identity.calls == 2

    identity.failure = None
    clock.advance(MIN_REFRESH)
    await client.get("a")
    assert identity.calls == 3
    clock.advance(1)
    await client.get("a")
    assert identity.calls == 3


FAILURES = ["connect", "timeout", "status", "body"]


def stranger_token() -> str:
    """A token signed by a key that identity does not publish."""
    stranger = FakeIdentity()
    stranger.add_key("b")
    return stranger.token("b")


@pytest.mark.parametrize("failure", FAILURES)
async def test_unreachable_identity_at_startup_means_503_not_401(
    verifier: TokenVerifier, identity: FakeIdentity, failure: str
) -> None:
    """A process started while identity is away cannot tell a good token from a forged
    one: it says so (503, try again), rather than calling the token invalid."""
    token = identity.token("a")
    identity.failure = failure

    with pytest.raises(KeysUnavailable) as raised:
        await verifier.verify(token, kinds={"access"})

    assert raised.value.status_code == 503
    assert raised.value.wire_name == "ServiceUnavailable"
    assert raised.value.headers["Retry-After"] == str(int(MIN_REFRESH))


async def test_a_kid_missing_from_a_fetched_jwks_is_an_unknown_key(
    verifier: TokenVerifier, identity: FakeIdentity
) -> None:
    with pytest.raises(InvalidToken, match="unknown key"):
        await verifier.verify(stranger_token(), kinds={"access"})


async def test_tokens_verify_once_identity_is_back(
    verifier: TokenVerifier, identity: FakeIdentity, clock: Clock
) -> None:
    token = identity.token("a")
    identity.failure = "connect"
    with pytest.raises(KeysUnavailable):
        await verifier.verify(token, kinds={"access"})

    identity.failure = None
    clock.advance(2)
    # Not fetched again before the interval is over; Retry-After counts down to it.
    with pytest.raises(KeysUnavailable) as raised:
        await verifier.verify(token, kinds={"access"})
    assert raised.value.headers["Retry-After"] == "3"
    assert identity.calls == 1

    clock.advance(3)
    assert (await verifier.verify(token, kinds={"access"})).key_id == "a"
    assert identity.calls == 2
    # The key set is fetched again: a kid it lacks is unknown, not unavailable.
    with pytest.raises(InvalidToken, match="unknown key"):
        await verifier.verify(stranger_token(), kinds={"access"})


async def test_made_up_kids_during_an_outage_fetch_at_most_once_per_interval(
    client: JWKSClient, identity: FakeIdentity, clock: Clock
) -> None:
    identity.failure = "status"
    for n in range(20):
        with pytest.raises(KeysUnavailable):
            await client.get(f"random-{n}")
    assert identity.calls == 1

    clock.advance(MIN_REFRESH)
    for n in range(20):
        with pytest.raises(KeysUnavailable):
            await client.get(f"again-{n}")
    assert identity.calls == 2


async def test_concurrent_lookups_during_an_outage_share_one_fetch(
    client: JWKSClient, identity: FakeIdentity
) -> None:
    identity.failure = "connect"
    identity.held = asyncio.Event()

    lookups = [asyncio.create_task(client.get(f"kid-{n}")) for n in range(25)]
    await identity.fetching.wait()
    identity.held.set()
    answers = await asyncio.gather(*lookups, return_exceptions=True)

    assert all(isinstance(answer, KeysUnavailable) for answer in answers)
    assert identity.calls == 1


async def test_cached_keys_verify_while_a_new_kid_is_unavailable(
    client: JWKSClient, identity: FakeIdentity, clock: Clock
) -> None:
    await client.get("a")
    identity.failure = "connect"
    clock.advance(MIN_REFRESH)

    with pytest.raises(KeysUnavailable):
        await client.get("rotated-in")
    assert await client.get("a") is not None
    clock.advance(TTL)  # stale, and identity still away: the cached key keeps serving
    assert await client.get("a") is not None


async def test_explicit_refresh_fetches_and_reports_success(
    client: JWKSClient, identity: FakeIdentity
) -> None:
    assert await client.refresh() is True
    identity.failure = "status"
    assert await client.refresh() is False
    assert identity.calls == 2
    assert await client.get("a") is not None


def _unsupported_keys() -> list[Any]:
    ed = public_jwk(generate_signing_key(), "x")
    rsa_public = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    rsa_jwk = jwt.algorithms.RSAAlgorithm.to_jwk(rsa_public, as_dict=True)
    pem = rsa_public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return [
        {**rsa_jwk, "kid": "rsa", "alg": "RS256"},
        {"kty": "oct", "kid": "hmac", "k": jwt.utils.base64url_encode(pem).decode()},
        {**ed, "kid": "ed-as-hs256", "alg": "HS256"},
        {**ed, "kid": "ed-for-encryption", "use": "enc"},
        {**ed, "kid": "x448", "crv": "X448"},
        {**ed, "kid": "broken", "x": "not base64!"},
        {**ed, "kid": ""},
        {"kty": "OKP"},
        "not an object",
    ]


async def test_keys_other_than_ed25519_signing_keys_are_ignored(
    client: JWKSClient, identity: FakeIdentity
) -> None:
    identity.extra_keys = _unsupported_keys()

    assert await client.get("a") is not None
    for entry in identity.extra_keys:
        kid = entry.get("kid") if isinstance(entry, dict) else None
        if kid:
            assert await client.get(kid) is None
    assert set(parse_jwks({"keys": identity.extra_keys})) == set()


async def test_static_key_source_trusts_exactly_the_last_jwks_set() -> None:
    first, second = generate_signing_key(), generate_signing_key()
    source = StaticKeySource({"keys": [public_jwk(first, "one")]})
    assert await source.get("one") is not None

    source.set_jwks({"keys": [public_jwk(second, "two"), *_unsupported_keys()]})

    assert await source.get("one") is None
    assert await source.get("two") is not None
    assert await source.get("rsa") is None


def test_jwks_without_a_keys_list_is_refused() -> None:
    documents: list[Any] = [{}, {"keys": {"kid": "a"}}, []]
    for document in documents:
        with pytest.raises(ValueError, match="keys"):
            parse_jwks(document)


async def test_duplicate_kid_keeps_the_first_key() -> None:
    first, second = generate_signing_key(), generate_signing_key()
    source = StaticKeySource({"keys": [public_jwk(first, "k"), public_jwk(second, "k")]})
    signer = TokenSigner(first, kid="k", issuer="iss")
    token, _ = signer.issue(subject="s", kind="access", audience="aud", lifetime=timedelta(1))

    verified = await TokenVerifier(source, issuer="iss", audience="aud").verify(
        token, kinds={"access"}
    )

    assert verified.key_id == "k"


async def test_durations_may_be_timedeltas(identity: FakeIdentity, clock: Clock) -> None:
    async with httpx.AsyncClient(transport=httpx.MockTransport(identity.handle)) as http:
        client = JWKSClient(
            http, URL, ttl=timedelta(minutes=10), min_refresh_interval=timedelta(0), clock=clock
        )
        await client.get("a")
        await client.get("unknown")
        clock.advance(599)
        await client.get("a")
        assert identity.calls == 2
        clock.advance(1)
        await client.get("a")
        assert identity.calls == 3


# Through a service


async def whoami(request: Request) -> Response:
    return JSONResponse({"subject": require_principal(request).identity})


@pytest.mark.parametrize(
    ("style", "detail"),
    [
        ("platform", ["ServiceUnavailable", KeysUnavailable(retry_after=1).message]),
        ("message", KeysUnavailable(retry_after=1).message),
    ],
    ids=["platform", "message"],
)
async def test_a_service_that_cannot_fetch_the_keys_answers_503_until_it_can(
    database_url: str, redis_url: str, identity: FakeIdentity, style: ErrorStyle, detail: Any
) -> None:
    """What a tracking restarted while identity is away answers (it answered 401 "token
    was signed by an unknown key", which callers take as a lasting refusal)."""
    settings = ServiceSettings(
        database_url=database_url,
        redis_url=redis_url,
        jwks_url=URL,
        jwt_issuer="iss",
        jwt_audience="aud",
        jwks_min_refresh_interval=timedelta(0),
        http_retries=0,
    )
    app = create_service_app(
        settings,
        title="sample",
        version="1",
        routes=[Route("/whoami", whoami)],
        migrations=None,
        http_transport=httpx.MockTransport(identity.handle),
        error_style=style,
    )
    headers = {"Authorization": f"Bearer {identity.token('a')}"}
    identity.failure = "connect"
    async with client_for(app) as client:
        away = await client.get("/whoami", headers=headers)
        identity.failure = None
        back = await client.get("/whoami", headers=headers)

    assert away.status_code == 503
    assert away.json() == {"detail": detail}
    assert away.headers["Retry-After"] == "1"
    assert back.status_code == 200
    assert back.json() == {"subject": "alice"}
