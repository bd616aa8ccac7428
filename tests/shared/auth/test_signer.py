"""Issuing: key handling and the shape of the tokens identity signs."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from shared.auth import (
    TokenKind,
    TokenSigner,
    generate_signing_key,
    new_kid,
    private_key_from_pem,
    private_key_to_pem,
    public_jwk,
)


def test_private_key_survives_a_pem_round_trip() -> None:
    key = generate_signing_key()

    pem = private_key_to_pem(key)
    loaded = private_key_from_pem(pem)

    assert pem.startswith(b"-----BEGIN PRIVATE KEY-----")
    assert public_jwk(loaded, "k") == public_jwk(key, "k")


def test_pem_of_another_key_type_is_refused() -> None:
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )

    with pytest.raises(ValueError, match="Ed25519"):
        private_key_from_pem(pem)


def test_public_jwk_is_an_ed25519_signing_key(signing_key: Ed25519PrivateKey) -> None:
    jwk = public_jwk(signing_key, "kid-1")

    assert jwk.keys() == {"kty", "crv", "x", "kid", "alg", "use"}
    assert (jwk["kty"], jwk["crv"], jwk["alg"], jwk["use"], jwk["kid"]) == (
        "OKP",
        "Ed25519",
        "EdDSA",
        "sig",
        "kid-1",
    )
    assert len(base64.urlsafe_b64decode(jwk["x"] + "=")) == 32
    assert public_jwk(signing_key.public_key(), "kid-1") == jwk


def test_new_kid_is_random_and_url_safe() -> None:
    kids = {new_kid() for _ in range(1000)}

    assert len(kids) == 1000
    assert all(len(kid) == 16 and kid.replace("-", "").replace("_", "").isalnum() for kid in kids)


def test_issued_token_has_the_documented_header_and_claims(signer: TokenSigner) -> None:
    now = datetime(2030, 1, 1, 12, 0, 0, 250_000, tzinfo=UTC)
    whole_second = int(now.timestamp())
    device_id = uuid4()

    token, claims = signer.issue(
        subject="user-1",
        kind=TokenKind.DEVICE,
        audience=["platform-api", "agent-api"],
        lifetime=timedelta(minutes=10),
        extra={"device_id": device_id, "admin": False},
        now=now,
    )

    assert jwt.get_unverified_header(token) == {"alg": "EdDSA", "kid": "key-1", "typ": "JWT"}
    assert claims == {
        "iss": "https://identity.test",
        "aud": ["platform-api", "agent-api"],
        "sub": "user-1",
        "iat": whole_second + 0.25,
        "nbf": whole_second,
        "exp": whole_second + 600,
        "jti": claims["jti"],
        "kind": "device",
        "device_id": str(device_id),
        "admin": False,
    }
    assert UUID(hex=claims["jti"]).version == 4
    assert jwt.decode(token, options={"verify_signature": False}) == claims


def test_token_without_lifetime_has_no_exp(signer: TokenSigner) -> None:
    _, claims = signer.issue(subject="s", kind=TokenKind.WORKLOAD, audience="a", lifetime=None)

    assert "exp" not in claims


def test_each_token_gets_its_own_jti(signer: TokenSigner) -> None:
    jtis = {
        signer.issue(subject="s", kind="access", audience="a", lifetime=timedelta(minutes=1))[1][
            "jti"
        ]
        for _ in range(100)
    }

    assert len(jtis) == 100


@pytest.mark.parametrize("claim", ["iss", "sub", "exp", "kind", "jti", "aud"])
def test_extra_claims_cannot_override_reserved_claims(signer: TokenSigner, claim: str) -> None:
    with pytest.raises(ValueError, match=claim):
        signer.issue(
            subject="s",
            kind="access",
            audience="a",
            lifetime=timedelta(minutes=1),
            extra={claim: "forged"},
        )


def test_naive_now_and_non_positive_lifetime_are_refused(signer: TokenSigner) -> None:
    with pytest.raises(ValueError, match="aware"):
        signer.issue(
            subject="s",
            kind="access",
            audience="a",
            lifetime=timedelta(minutes=1),
            now=datetime(2030, 1, 1),
        )
    with pytest.raises(ValueError, match="positive"):
        signer.issue(subject="s", kind="access", audience="a", lifetime=timedelta(0))
