"""Fixtures for the auth tests: a signing key, a verifier over it, and a revocation list on
the real Redis (``redis_client`` comes from ``tests/shared/conftest.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any
from uuid import uuid4

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from redis.asyncio import Redis

from shared.auth import (
    APIKeyTokens,
    RevocationList,
    ScopeKind,
    ScopeState,
    StaticKeySource,
    TokenKind,
    TokenSigner,
    TokenVerifier,
    WorkloadScope,
    generate_signing_key,
)
from shared.redis import Keys

ISSUER = "https://identity.test"
AUDIENCE = "platform-api"


@pytest.fixture
def signing_key() -> Ed25519PrivateKey:
    return generate_signing_key()


@pytest.fixture
def signer(signing_key: Ed25519PrivateKey) -> TokenSigner:
    return TokenSigner(signing_key, kid="key-1", issuer=ISSUER)


@pytest.fixture
def key_source(signer: TokenSigner) -> StaticKeySource:
    return StaticKeySource({"keys": [signer.public_jwk()]})


@pytest.fixture
def verifier(key_source: StaticKeySource) -> TokenVerifier:
    return TokenVerifier(key_source, issuer=ISSUER, audience=AUDIENCE)


IssueToken = Callable[..., str]


@pytest.fixture
def issue(signer: TokenSigner) -> IssueToken:
    """Issue a token with sensible defaults; keyword arguments override them."""

    def issue_token(**overrides: Any) -> str:
        arguments: dict[str, Any] = {
            "subject": str(uuid4()),
            "kind": TokenKind.ACCESS,
            "audience": AUDIENCE,
            "lifetime": timedelta(hours=1),
        }
        arguments.update(overrides)
        token, _ = signer.issue(**arguments)
        return token

    return issue_token


@pytest.fixture
async def revocations(redis_client: Redis, redis_namespace: str) -> AsyncIterator[RevocationList]:
    revocations = RevocationList(redis_client, Keys(redis_namespace))
    yield revocations
    await revocations.aclose()


class Clock:
    """Monotonic seconds for the caches and rate limits under test; tests move it
    instead of waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


class TrackingObjects:
    """Stands in for tracking, the other service that holds workload tokens' objects: a
    :class:`~shared.auth.ScopeSource` over a dict, counting the lookups."""

    def __init__(self) -> None:
        self.states: dict[WorkloadScope, ScopeState] = {}
        self.lookups = 0

    def add(
        self, kind: ScopeKind = ScopeKind.PIPELINE_RUN, *, active: bool = True, usable: bool = True
    ) -> WorkloadScope:
        scope = WorkloadScope(kind, uuid4())
        self.put(scope, active=active, usable=usable)
        return scope

    def put(self, scope: WorkloadScope, *, active: bool, usable: bool) -> None:
        self.states[scope] = ScopeState(kind=scope.kind, id=scope.id, active=active, usable=usable)

    async def state(self, scope: WorkloadScope) -> ScopeState | None:
        self.lookups += 1
        return self.states.get(scope)


@pytest.fixture
def tracking_objects() -> TrackingObjects:
    return TrackingObjects()


def stored(tokens: APIKeyTokens) -> str:
    """Everything ``tokens`` (a service's kept API-key exchanges) holds, spelled out."""
    return repr(vars(tokens)) + repr(vars(tokens._cache))
