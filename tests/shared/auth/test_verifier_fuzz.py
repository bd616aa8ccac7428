"""Property tests: no bit flip and no claim value makes the verifier accept or crash."""

from __future__ import annotations

import base64
import json
import time
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.auth import (
    InvalidToken,
    StaticKeySource,
    TokenKind,
    TokenSigner,
    TokenVerifier,
    generate_signing_key,
    public_jwk,
)

ACCESS = {TokenKind.ACCESS}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


# Hypothesis runs many examples per test, so the key material is built once per module.
_FUZZ_KEY = generate_signing_key()
_FUZZ_SIGNER = TokenSigner(_FUZZ_KEY, kid="fuzz", issuer="iss")
_FUZZ_VERIFIER = TokenVerifier(
    StaticKeySource({"keys": [public_jwk(_FUZZ_KEY, "fuzz")]}), issuer="iss", audience="aud"
)
_FUZZ_TOKEN, _ = _FUZZ_SIGNER.issue(
    subject="alice", kind="access", audience="aud", lifetime=timedelta(days=1)
)


def _signed(header: dict[str, Any], payload: dict[str, Any]) -> str:
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(payload).encode())}"
    return f"{signing_input}.{_b64(_FUZZ_KEY.sign(signing_input.encode()))}"


@settings(max_examples=300, deadline=None)
@given(position=st.integers(0, len(_FUZZ_TOKEN) - 1), bit=st.integers(0, 7))
async def test_bit_flip_anywhere_is_rejected(position: int, bit: int) -> None:
    flipped = chr(ord(_FUZZ_TOKEN[position]) ^ (1 << bit))
    token = _FUZZ_TOKEN[:position] + flipped + _FUZZ_TOKEN[position + 1 :]

    with pytest.raises(InvalidToken):
        await _FUZZ_VERIFIER.verify(token, kinds=ACCESS)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    claim=st.sampled_from(
        ["iss", "aud", "sub", "iat", "nbf", "exp", "jti", "kind", "admin", "device_id"]
    ),
    value=_json_values,
)
async def test_signed_tokens_with_arbitrary_claim_values_never_crash(
    claim: str, value: Any
) -> None:
    now = int(time.time())
    payload = {
        "iss": "iss",
        "aud": "aud",
        "sub": "alice",
        "iat": now,
        "exp": now + 60,
        "jti": "j",
        "kind": "access",
        claim: value,
    }
    token = _signed({"alg": "EdDSA", "kid": "fuzz"}, payload)

    try:
        verified = await _FUZZ_VERIFIER.verify(token, kinds=ACCESS)
    except InvalidToken:
        return
    assert isinstance(verified.is_admin, bool)
    assert isinstance(verified.device_id, UUID | None)
