"""The rejection matrix of security.md §1.3: every bad token is a 401, never a crash."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import jwt
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from shared.auth import (
    InvalidToken,
    StaticKeySource,
    TokenKind,
    TokenSigner,
    TokenVerifier,
    generate_signing_key,
    public_jwk,
)
from shared.errors import Unauthorized

ACCESS = {TokenKind.ACCESS}
MISSING = object()


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def as_json(value: dict[str, Any] | str) -> bytes:
    return value.encode() if isinstance(value, str) else json.dumps(value).encode()


def assemble(
    header: dict[str, Any] | str, payload: dict[str, Any] | str, sign: Callable[[bytes], bytes]
) -> str:
    """A compact JWS over exactly these JSON texts (strings are used verbatim)."""
    signing_input = f"{b64(as_json(header))}.{b64(as_json(payload))}"
    return f"{signing_input}.{b64(sign(signing_input.encode()))}"


def claims(verifier: TokenVerifier, **overrides: Any) -> dict[str, Any]:
    """Well-formed claims for ``verifier``; an override of ``MISSING`` drops the claim."""
    now = int(time.time())
    values: dict[str, Any] = {
        "iss": verifier.issuer,
        "aud": verifier.audience,
        "sub": str(uuid4()),
        "iat": now,
        "nbf": now,
        "exp": now + 3600,
        "jti": uuid4().hex,
        "kind": "access",
    }
    values.update(overrides)
    return {key: value for key, value in values.items() if value is not MISSING}


class RecordingKeySource:
    """Remembers which kids were looked up, to prove a rejection came first."""

    def __init__(self, inner: StaticKeySource) -> None:
        self.inner = inner
        self.lookups: list[str] = []

    async def get(self, kid: str) -> jwt.PyJWK | None:
        self.lookups.append(kid)
        return await self.inner.get(kid)


class DictKeySource:
    """Serves any key, unfiltered, as a misbehaving key source might."""

    def __init__(self, keys: dict[str, jwt.PyJWK]) -> None:
        self.keys = keys

    async def get(self, kid: str) -> jwt.PyJWK | None:
        return self.keys.get(kid)


@pytest.fixture
def recording(key_source: StaticKeySource) -> RecordingKeySource:
    return RecordingKeySource(key_source)


@pytest.fixture
def recording_verifier(recording: RecordingKeySource) -> TokenVerifier:
    return TokenVerifier(recording, issuer="https://identity.test", audience="platform-api")


async def rejected(verifier: TokenVerifier, token: str, kinds: set[str] | None = None) -> str:
    with pytest.raises(InvalidToken) as caught:
        await verifier.verify(token, kinds=kinds or ACCESS)
    if len(token) > 3:  # a short token could coincide with a word of the message
        assert token not in caught.value.message
    return caught.value.message


async def test_valid_token_verifies_with_its_claims(
    verifier: TokenVerifier, signer: TokenSigner
) -> None:
    user_id, device_id = uuid4(), uuid4()
    token, issued = signer.issue(
        subject=str(user_id),
        kind=TokenKind.ACCESS,
        audience="platform-api",
        lifetime=timedelta(hours=1),
        extra={"name": "alice", "admin": True, "device_id": device_id},
    )

    verified = await verifier.verify(token, kinds=ACCESS)

    assert verified.raw == token
    assert dict(verified.claims) == issued
    assert verified.subject == str(user_id)
    assert verified.user_id == user_id
    assert verified.device_id == device_id
    assert verified.kind == "access"
    assert verified.jti == issued["jti"]
    assert verified.key_id == "key-1"
    assert verified.is_admin is True
    assert verified.name == "alice"
    assert verified.issued_at == datetime.fromtimestamp(issued["iat"], UTC)
    assert verified.expires_at == datetime.fromtimestamp(issued["exp"], UTC)
    assert token not in repr(verified)


async def test_non_uuid_subject_has_no_user_id(verifier: TokenVerifier, issue: Any) -> None:
    verified = await verifier.verify(issue(subject="service:tracking"), kinds=ACCESS)

    assert verified.user_id is None
    assert verified.is_admin is False


async def test_alg_none_is_rejected_before_key_lookup(
    recording_verifier: TokenVerifier, recording: RecordingKeySource
) -> None:
    header = {"alg": "none", "kid": "key-1", "typ": "JWT"}
    token = assemble(header, claims(recording_verifier), lambda _: b"")
    token_with_signature = assemble(header, claims(recording_verifier), lambda _: b"x" * 64)

    assert await rejected(recording_verifier, token) == "token is malformed"
    assert "not allowed" in await rejected(recording_verifier, token_with_signature)
    assert recording.lookups == []


@pytest.mark.parametrize("encoding", ["pem", "raw"])
async def test_hs256_signed_with_the_public_key_is_rejected(
    recording_verifier: TokenVerifier,
    recording: RecordingKeySource,
    signing_key: Ed25519PrivateKey,
    encoding: str,
) -> None:
    public = signing_key.public_key()
    secret = (
        public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        if encoding == "pem"
        else public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )
    token = assemble(
        {"alg": "HS256", "kid": "key-1", "typ": "JWT"},
        claims(recording_verifier),
        lambda data: hmac.new(secret, data, hashlib.sha256).digest(),
    )

    assert await rejected(recording_verifier, token) == "token algorithm is not allowed"
    assert recording.lookups == []


async def test_header_alg_differing_from_the_keys_is_rejected(
    signing_key: Ed25519PrivateKey,
) -> None:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    rsa_jwk = jwt.algorithms.RSAAlgorithm.to_jwk(rsa_key.public_key(), as_dict=True)
    keys = DictKeySource(
        {
            "ed": jwt.PyJWK(public_jwk(signing_key, "ed")),
            "rsa": jwt.PyJWK({**rsa_jwk, "kid": "rsa", "alg": "RS256"}),
        }
    )
    verifier = TokenVerifier(keys, issuer="iss", audience="aud", algorithms=("EdDSA", "RS256"))
    payload = claims(verifier)
    # An RS256 token that names the Ed25519 key, and an EdDSA token that names the RSA key.
    rs256_on_ed_key = assemble(
        {"alg": "RS256", "kid": "ed"},
        payload,
        lambda data: rsa_key.sign(data, padding.PKCS1v15(), hashes.SHA256()),
    )
    eddsa_on_rsa_key = assemble({"alg": "EdDSA", "kid": "rsa"}, payload, signing_key.sign)

    for token in (rs256_on_ed_key, eddsa_on_rsa_key):
        assert await rejected(verifier, token) == "token algorithm does not match its key"


async def test_unknown_kid_is_rejected(issue: Any) -> None:
    other = TokenSigner(generate_signing_key(), kid="elsewhere", issuer="https://identity.test")
    verifier = TokenVerifier(
        StaticKeySource({"keys": [public_jwk(generate_signing_key(), "key-1")]}),
        issuer="https://identity.test",
        audience="platform-api",
    )
    token, _ = other.issue(
        subject="s", kind="access", audience="platform-api", lifetime=timedelta(hours=1)
    )

    assert await rejected(verifier, token) == "token was signed by an unknown key"


async def test_token_signed_by_another_key_under_a_known_kid_is_rejected(
    verifier: TokenVerifier,
) -> None:
    impostor = TokenSigner(generate_signing_key(), kid="key-1", issuer="https://identity.test")
    token, _ = impostor.issue(
        subject="s", kind="access", audience="platform-api", lifetime=timedelta(hours=1)
    )

    assert await rejected(verifier, token) == "token signature is invalid"


async def test_missing_kid_is_rejected_before_key_lookup(
    recording_verifier: TokenVerifier,
    recording: RecordingKeySource,
    signing_key: Ed25519PrivateKey,
) -> None:
    for header in ({"alg": "EdDSA"}, {"alg": "EdDSA", "kid": ""}, {"alg": "EdDSA", "kid": 7}):
        token = assemble(header, claims(recording_verifier), signing_key.sign)
        assert await rejected(recording_verifier, token) == "token header has no valid key id"
    assert recording.lookups == []


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("jku", "https://attacker.example/jwks.json"),
        ("x5u", "https://attacker.example/cert.pem"),
        ("jwk", {"kty": "OKP", "crv": "Ed25519", "x": "AAAA"}),
        ("x5c", ["MIIB"]),
        ("crit", ["exp"]),
    ],
)
async def test_key_referencing_headers_are_rejected_before_key_lookup(
    recording_verifier: TokenVerifier,
    recording: RecordingKeySource,
    signing_key: Ed25519PrivateKey,
    name: str,
    value: Any,
) -> None:
    header = {"alg": "EdDSA", "kid": "key-1", name: value}
    token = assemble(header, claims(recording_verifier), signing_key.sign)

    assert name in await rejected(recording_verifier, token)
    assert recording.lookups == []


async def test_wrong_issuer_is_rejected(verifier: TokenVerifier, issue: Any) -> None:
    other = TokenVerifier(verifier.keys, issuer="https://other.test", audience="platform-api")

    assert await rejected(other, issue()) == "token issuer is not trusted"


async def test_wrong_audience_is_rejected(verifier: TokenVerifier, issue: Any) -> None:
    token = issue(audience="agent-api")

    assert await rejected(verifier, token) == "token audience is not accepted here"


async def test_one_matching_audience_in_a_list_is_accepted(
    verifier: TokenVerifier, issue: Any
) -> None:
    token = issue(audience=["agent-api", "platform-api"])

    assert (await verifier.verify(token, kinds=ACCESS)).claims["aud"] == [
        "agent-api",
        "platform-api",
    ]


@pytest.mark.parametrize("claim", ["aud", "iss", "sub", "iat", "jti", "kind"])
async def test_missing_required_claim_is_rejected(
    verifier: TokenVerifier, signing_key: Ed25519PrivateKey, claim: str
) -> None:
    token = assemble(
        {"alg": "EdDSA", "kid": "key-1"},
        claims(verifier, **{claim: MISSING}),
        signing_key.sign,
    )

    assert await rejected(verifier, token) == f"token lacks the required '{claim}' claim"


async def test_expired_beyond_leeway_is_rejected(verifier: TokenVerifier, issue: Any) -> None:
    lifetime = timedelta(hours=1)
    token = issue(lifetime=lifetime, now=datetime.now(UTC) - lifetime - timedelta(seconds=45))

    assert await rejected(verifier, token) == "token has expired"


async def test_expired_within_leeway_is_accepted(verifier: TokenVerifier, issue: Any) -> None:
    lifetime = timedelta(hours=1)
    token = issue(lifetime=lifetime, now=datetime.now(UTC) - lifetime - timedelta(seconds=10))

    verified = await verifier.verify(token, kinds=ACCESS)

    assert verified.expires_at is not None
    assert verified.expires_at < datetime.now(UTC)


async def test_leeway_may_be_a_timedelta(key_source: StaticKeySource, issue: Any) -> None:
    verifier = TokenVerifier(
        key_source,
        issuer="https://identity.test",
        audience="platform-api",
        leeway=timedelta(minutes=2),
    )
    lifetime = timedelta(hours=1)
    token = issue(lifetime=lifetime, now=datetime.now(UTC) - lifetime - timedelta(seconds=90))

    await verifier.verify(token, kinds=ACCESS)


async def test_nbf_in_the_future_is_rejected(
    verifier: TokenVerifier, signing_key: Ed25519PrivateKey
) -> None:
    payload = claims(verifier, nbf=int(time.time()) + 120)
    token = assemble({"alg": "EdDSA", "kid": "key-1"}, payload, signing_key.sign)

    assert await rejected(verifier, token) == "token is not valid yet"


async def test_iat_in_the_future_is_rejected(verifier: TokenVerifier, issue: Any) -> None:
    token = issue(now=datetime.now(UTC) + timedelta(minutes=5))

    assert await rejected(verifier, token) == "token is not valid yet"


async def test_times_are_checked_on_the_verifiers_clock(
    key_source: StaticKeySource, issue: Any
) -> None:
    later = datetime.now(UTC) + timedelta(hours=2)
    verifier = TokenVerifier(
        key_source, issuer="https://identity.test", audience="platform-api", clock=lambda: later
    )

    assert await rejected(verifier, issue()) == "token has expired"
    # Not valid yet by the real time, issued at the verifier's now.
    verified = await verifier.verify(issue(now=later), kinds=ACCESS)
    assert verified.issued_at == later


async def test_missing_exp_is_rejected_for_kinds_that_require_it(
    verifier: TokenVerifier, issue: Any
) -> None:
    token = issue(kind=TokenKind.GENERIC, lifetime=None)

    message = await rejected(verifier, token, kinds={TokenKind.GENERIC})

    assert message == "token lacks the required 'exp' claim"


async def test_workload_token_without_exp_is_accepted(verifier: TokenVerifier, issue: Any) -> None:
    token = issue(kind=TokenKind.WORKLOAD, lifetime=None, extra={"pipeline_run_id": uuid4()})

    verified = await verifier.verify(token, kinds={TokenKind.WORKLOAD})

    assert verified.kind == "workload"
    assert verified.expires_at is None


async def test_wrong_kind_is_rejected(verifier: TokenVerifier, issue: Any) -> None:
    token = issue(kind=TokenKind.WORKLOAD, lifetime=None)

    message = await rejected(verifier, token, kinds={TokenKind.ACCESS, TokenKind.GENERIC})

    assert message == "token kind workload not accepted here"


@pytest.mark.parametrize(
    ("claim", "value"),
    [
        ("exp", "tomorrow"),
        ("exp", [1]),
        pytest.param("iat", str(int(time.time())), id="iat-numeric-string"),
        ("nbf", True),
        ("sub", 42),
        ("sub", ""),
        ("jti", None),
        ("kind", ["access"]),
        ("aud", {"aud": "platform-api"}),
        ("exp", 10**30),
        ("iat", -(10**30)),
    ],
)
async def test_malformed_claim_values_are_rejected(
    verifier: TokenVerifier, signing_key: Ed25519PrivateKey, claim: str, value: Any
) -> None:
    token = assemble(
        {"alg": "EdDSA", "kid": "key-1"}, claims(verifier, **{claim: value}), signing_key.sign
    )

    await rejected(verifier, token)


async def test_duplicate_header_member_is_rejected(
    recording_verifier: TokenVerifier,
    recording: RecordingKeySource,
    signing_key: Ed25519PrivateKey,
) -> None:
    header = '{"alg":"EdDSA","kid":"unknown","kid":"key-1"}'
    token = assemble(header, claims(recording_verifier), signing_key.sign)

    assert await rejected(recording_verifier, token) == "token header is not valid JSON"
    assert recording.lookups == []


async def test_duplicate_payload_member_is_rejected(
    verifier: TokenVerifier, signing_key: Ed25519PrivateKey
) -> None:
    # Correctly signed: only the duplicate "sub" is wrong. Parsers disagree on which one
    # wins, so the token must not be accepted at all.
    payload = json.dumps(claims(verifier, sub="alice"))[:-1] + ', "sub": "admin"}'
    token = assemble({"alg": "EdDSA", "kid": "key-1"}, payload, signing_key.sign)

    assert await rejected(verifier, token) == "token payload is not valid JSON"


@pytest.mark.parametrize(
    "token",
    [
        "",
        "not-a-jwt",
        "a.b",
        "a.b.c.d",
        "..",
        "eyJhbGciOiJFZERTQSJ9..",
        "eyJhbGciOiJFZERTQSIsImtpZCI6ImtleS0xIn0=.e30.AAAA",
        "e30.e30.AAAA",
        "W10.e30.AAAA",
        "bnVsbA.e30.AAAA",
        "é.é.é",
        "A" * 10_000,
    ],
)
async def test_garbage_is_rejected(verifier: TokenVerifier, token: str) -> None:
    await rejected(verifier, token)


B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def spellable_token(verifier: TokenVerifier, signing_key: Ed25519PrivateKey) -> str:
    """A token signed by the real key each of whose segments has other spellings of the
    same bytes: a length that takes padding (so spare low bits in its last character),
    and a '-' or '_' (so a standard-alphabet twin)."""
    for attempt in range(500):
        header = {"alg": "EdDSA", "kid": "key-1", "pad": "?~" * (attempt % 5)}
        token = assemble(header, claims(verifier, pad="?~" * (attempt // 5)), signing_key.sign)
        if all(len(s) % 4 and ("-" in s or "_" in s) for s in token.split(".")):
            return token
    raise AssertionError("no token has every kind of alternative spelling")


def respelled(segment: str, how: str) -> str:
    """The same bytes as ``segment`` in a non-canonical base64 spelling."""
    match how:
        case "padded":
            return segment + "=" * (-len(segment) % 4)
        case "standard alphabet":
            return segment.translate(str.maketrans("-_", "+/"))
        case "spare bits set":  # the lowest bit of the last character encodes nothing
            return segment[:-1] + B64URL[B64URL.index(segment[-1]) ^ 1]
    raise AssertionError(how)


def lenient_decode(segment: str) -> bytes:
    """What a lax decoder (Python's, PyJWT's) makes of a segment."""
    bare = segment.rstrip("=")
    return base64.urlsafe_b64decode(bare + "=" * (-len(bare) % 4))


@pytest.mark.parametrize("how", ["padded", "standard alphabet", "spare bits set"])
@pytest.mark.parametrize("position", [0, 1, 2], ids=["header", "payload", "signature"])
async def test_non_canonical_spelling_of_a_signed_token_is_rejected(
    verifier: TokenVerifier, signing_key: Ed25519PrivateKey, position: int, how: str
) -> None:
    token = spellable_token(verifier, signing_key)
    segments = token.split(".")
    original = segments[position]
    segments[position] = respelled(original, how)
    variant = ".".join(segments)
    assert variant != token
    assert lenient_decode(segments[position]) == lenient_decode(original)  # the signed bytes
    name = ["header", "payload", "signature"][position]

    message = await rejected(verifier, variant)

    assert message.startswith(f"token {name} is not ")
    assert (await verifier.verify(token, kinds=ACCESS)).raw == token


async def test_nan_in_payload_is_rejected(
    verifier: TokenVerifier, signing_key: Ed25519PrivateKey
) -> None:
    payload = json.dumps(claims(verifier))[:-1] + ', "admin": NaN}'
    token = assemble({"alg": "EdDSA", "kid": "key-1"}, payload, signing_key.sign)

    assert await rejected(verifier, token) == "token payload is not valid JSON"


def test_verifier_refuses_symmetric_or_none_algorithms(key_source: StaticKeySource) -> None:
    for algorithms in (("HS256",), ("EdDSA", "none"), ()):
        with pytest.raises(ValueError, match="asymmetric"):
            TokenVerifier(key_source, issuer="iss", audience="aud", algorithms=algorithms)


async def test_invalid_token_is_a_401_with_an_invalid_token_challenge(
    verifier: TokenVerifier,
) -> None:
    with pytest.raises(InvalidToken) as caught:
        await verifier.verify("nope", kinds=ACCESS)

    assert isinstance(caught.value, Unauthorized)
    assert caught.value.status_code == 401
    assert caught.value.headers == {"WWW-Authenticate": 'Bearer error="invalid_token"'}
    assert caught.value.detail() == ["CredentialsNotValid", "token is malformed"]
