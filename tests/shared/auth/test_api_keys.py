"""``ZENKEY_`` bearers: the per-process cache of their tokens, and the exchange at identity
over HTTP (identity itself faked at the transport)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid

import httpx
import pytest

from shared.auth import (
    APIKeyRefused,
    APIKeyToken,
    APIKeyTokens,
    EncodedKey,
    ExchangeLimit,
    IdentityKeySource,
)
from shared.errors import ServiceUnavailable
from shared.throttle import LoginThrottled
from tests.shared.auth.conftest import stored


def a_key() -> str:
    return EncodedKey(id=uuid.uuid4(), key=uuid.uuid4().hex).encode()


class Source:
    """Identity's exchange, as a list of what it was asked and a rule for its answers."""

    def __init__(self, lifetime: int = 3600) -> None:
        self.lifetime = lifetime
        self.asked: list[tuple[str, str | None]] = []
        self.refuse: str | None = None
        self.throttle: int | None = None
        self.gate: asyncio.Event | None = None

    async def exchange(self, api_key: str, client: str | None) -> APIKeyToken:
        self.asked.append((api_key, client))
        if self.gate is not None:
            await self.gate.wait()
        if self.throttle is not None:
            raise LoginThrottled(self.throttle)
        if self.refuse is not None:
            raise APIKeyRefused(self.refuse)
        return APIKeyToken(access_token=f"token-{len(self.asked)}", expires_in=self.lifetime)


class Monotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def source() -> Source:
    return Source()


@pytest.fixture
def clock() -> Monotonic:
    return Monotonic()


@pytest.fixture
def tokens(source: Source, clock: Monotonic) -> APIKeyTokens:
    return APIKeyTokens(source, refusal_ttl=10, margin=30, clock=clock)


async def test_a_key_is_exchanged_once_until_shortly_before_its_token_expires(
    tokens: APIKeyTokens, source: Source, clock: Monotonic
):
    key = a_key()
    assert await tokens.token(key, "10.0.0.1") == "token-1"
    clock.now += 3569
    assert await tokens.token(key, "10.0.0.2") == "token-1"
    clock.now += 1
    assert await tokens.token(key, "10.0.0.2") == "token-2"
    assert source.asked == [(key, "10.0.0.1"), (key, "10.0.0.2")]


async def test_a_refused_token_is_exchanged_again(tokens: APIKeyTokens, source: Source):
    key = a_key()
    first = await tokens.token(key, None)
    assert await tokens.token(key, None, refused=first) == "token-2"
    # A token another request already replaced is not a reason to exchange again.
    assert await tokens.token(key, None, refused=first) == "token-2"
    assert len(source.asked) == 2


async def test_a_refusal_is_kept_for_its_ttl_only(
    tokens: APIKeyTokens, source: Source, clock: Monotonic
):
    key = a_key()
    source.refuse = "API key ci associated with service account bot is not active"
    for _ in range(3):
        with pytest.raises(APIKeyRefused) as refused:
            await tokens.token(key, None)
        assert refused.value.reason == source.refuse
    assert len(source.asked) == 1
    source.refuse = None
    clock.now += 10
    assert await tokens.token(key, None) == "token-2"


async def test_an_undecodable_key_is_refused_without_asking_identity(
    tokens: APIKeyTokens, source: Source
):
    for garbled in ("ZENKEY_", "ZENKEY_not base64!", "ZENKEY_" + "eyJpZCI6IDF9", "ZENKEY_" * 200):
        with pytest.raises(APIKeyRefused) as refused:
            await tokens.token(garbled, None)
        assert refused.value.message == "Authentication error: error decoding API key"
    assert source.asked == []


async def test_the_cache_knows_keys_by_their_hash_and_is_bounded(source: Source):
    tokens = APIKeyTokens(source, max_entries=2)
    keys = [a_key() for _ in range(3)]
    for key in keys:
        await tokens.token(key, None)
    assert len(tokens) == 2
    kept = stored(tokens)
    assert not any(key in kept or key.removeprefix("ZENKEY_") in kept for key in keys)
    assert repr(hashlib.sha256(keys[2].encode()).digest()) in kept
    # The first key was dropped: it is exchanged again.
    await tokens.token(keys[0], None)
    assert len(source.asked) == 4


async def test_requests_with_the_same_key_at_once_share_one_exchange(
    tokens: APIKeyTokens, source: Source
):
    key = a_key()
    source.gate = asyncio.Event()
    waiting = [asyncio.create_task(tokens.token(key, None)) for _ in range(5)]
    await asyncio.sleep(0)
    source.gate.set()
    assert set(await asyncio.gather(*waiting)) == {"token-1"}
    assert len(source.asked) == 1


def limited(source: Source, clock: Monotonic, per_minute: int) -> APIKeyTokens:
    return APIKeyTokens(source, limit=ExchangeLimit(per_minute, clock=clock), clock=clock)


async def test_random_keys_from_one_address_stop_reaching_identity(
    source: Source, clock: Monotonic
):
    tokens = limited(source, clock, per_minute=5)
    source.refuse = "error retrieving API key"
    for attempt in range(20):
        with pytest.raises((APIKeyRefused, LoginThrottled)) as refused:
            await tokens.token(a_key(), "10.0.0.1")
        if attempt >= 5:
            assert isinstance(refused.value, LoginThrottled)
            assert refused.value.headers["Retry-After"] == "12"  # one exchange per 12 s
    assert len(source.asked) == 5
    # Another address has its own allowance; this one regains one exchange in 12 s.
    with pytest.raises(APIKeyRefused):
        await tokens.token(a_key(), "10.0.0.2")
    clock.now += 12
    with pytest.raises(APIKeyRefused):
        await tokens.token(a_key(), "10.0.0.1")
    with pytest.raises(LoginThrottled):
        await tokens.token(a_key(), "10.0.0.1")
    assert len(source.asked) == 7


async def test_identity_throttling_an_address_is_remembered_until_its_retry_after(
    tokens: APIKeyTokens, source: Source, clock: Monotonic
):
    key = a_key()
    source.throttle = 30
    for waited in range(100):
        with pytest.raises(LoginThrottled) as throttled:
            await tokens.token(key if waited % 2 else a_key(), "10.0.0.1")
        assert int(throttled.value.headers["Retry-After"]) == 30 - waited // 4
        clock.now += 0.25
    assert len(source.asked) == 1
    # The address, not the key, was throttled: elsewhere the key is asked about.
    with pytest.raises(LoginThrottled):
        await tokens.token(key, "10.0.0.2")
    assert len(source.asked) == 2
    source.throttle = None
    clock.now += 5
    assert await tokens.token(key, "10.0.0.1") == "token-3"


async def test_a_kept_token_is_not_limited(source: Source, clock: Monotonic):
    tokens = limited(source, clock, per_minute=1)
    key = a_key()
    assert await tokens.token(key, "10.0.0.1") == "token-1"
    with pytest.raises(LoginThrottled):
        await tokens.token(a_key(), "10.0.0.1")
    assert await tokens.token(key, "10.0.0.1") == "token-1"


async def test_requests_sharing_an_exchange_count_as_one(source: Source, clock: Monotonic):
    tokens = limited(source, clock, per_minute=1)
    key = a_key()
    source.gate = asyncio.Event()
    waiting = [asyncio.create_task(tokens.token(key, "10.0.0.1")) for _ in range(5)]
    await asyncio.sleep(0)
    source.gate.set()
    assert set(await asyncio.gather(*waiting)) == {"token-1"}


def test_the_limit_remembers_a_bounded_number_of_addresses(clock: Monotonic):
    limit = ExchangeLimit(1, max_clients=2, clock=clock)
    for client in ("a", "b", "c"):
        limit.admit(client)
    with pytest.raises(LoginThrottled):
        limit.admit("c")
    limit.admit("a")  # forgotten, so it starts full again


def identity_answering(handler: httpx.MockTransport) -> IdentityKeySource:
    return IdentityKeySource(httpx.AsyncClient(transport=handler), "http://identity/", httpx.Auth())


async def test_identity_is_asked_with_the_key_and_the_callers_address():
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"access_token": "jwt", "expires_in": 60})

    key = a_key()
    issued = await identity_answering(httpx.MockTransport(answer)).exchange(key, "10.1.2.3")
    assert (issued.access_token, issued.expires_in) == ("jwt", 60)
    assert str(seen[0].url) == "http://identity/internal/v1/api_key_tokens"
    assert json.loads(seen[0].content) == {"api_key": key, "client": "10.1.2.3"}


@pytest.mark.parametrize(
    ("status", "body", "headers", "raised"),
    [
        (200, {"refused": "error retrieving API key"}, {}, APIKeyRefused),
        # Identity refusing this service's own token is no answer about the key.
        (
            401,
            {"detail": ["CredentialsNotValid", "Authentication error: no"]},
            {},
            ServiceUnavailable,
        ),
        (429, {"detail": "Too many failed login attempts."}, {"Retry-After": "7"}, LoginThrottled),
        (500, {"detail": ["RuntimeError", "boom"]}, {}, ServiceUnavailable),
        (200, {"expires_in": 60}, {}, ServiceUnavailable),
        (200, {"access_token": 1}, {}, ServiceUnavailable),
    ],
)
async def test_identity_answers_become_refusals_throttling_or_503(
    status: int, body: object, headers: dict[str, str], raised: type[Exception]
):
    def answer(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json=body, headers=headers)

    with pytest.raises(raised) as caught:
        await identity_answering(httpx.MockTransport(answer)).exchange(a_key(), None)
    if isinstance(caught.value, APIKeyRefused):
        assert caught.value.reason == "error retrieving API key"
    if isinstance(caught.value, LoginThrottled):
        assert caught.value.headers["Retry-After"] == "7"


async def test_identity_out_of_reach_is_503():
    def answer(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(ServiceUnavailable):
        await identity_answering(httpx.MockTransport(answer)).exchange(a_key(), None)
