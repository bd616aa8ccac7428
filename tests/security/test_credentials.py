"""Forged, stale and guessed credentials against the real stack, through the gateway.

Each web service of the platform entrypoint refuses, with 401: a token of a deleted user
(also one signed after the deletion, as a stolen signing key would allow), a device token
without its device id, a token signed by a key identity never had, an expired token and a
logged-out one. Random ``ZENKEY_`` bearers from one address stop reaching identity. A
password typed into the name field of a failed login is in no log of the stack.

Tokens are signed with the stack's own key the way an attacker holding it would: read from
identity's database and decrypted with the Fernet key in the data dir's ``secrets.json``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx
import jwt
import pytest
from cryptography.fernet import Fernet, MultiFernet
from prometheus_client.parser import text_string_to_metric_families

from shared.auth import (
    EncodedKey,
    TokenKind,
    TokenSigner,
    generate_signing_key,
    private_key_from_pem,
)
from tests.security.support import ADMIN_PASSWORD, bearer, login
from tests.support.processes import LaunchedStack
from tests.support.waiting import wait_for

pytestmark = pytest.mark.e2e

# An authenticated read on each web service of the platform entrypoint.
PROTECTED = {
    "identity": "/api/v1/current-user",
    "tracking": "/api/v1/projects",
    "webhooks": "/api/v1/webhooks",
}
EXCHANGE_ROUTE = "/internal/v1/api_key_tokens"


def statuses(http: httpx.Client, stack: LaunchedStack, token: str) -> dict[str, int]:
    return {
        service: http.get(stack.url("platform", path), headers=bearer(token)).status_code
        for service, path in PROTECTED.items()
    }


def everywhere(status: int) -> dict[str, int]:
    return dict.fromkeys(PROTECTED, status)


def claims_of(token: str) -> dict[str, Any]:
    """A token's header and claims merged, read without checking anything."""
    header = jwt.get_unverified_header(token)
    return {**jwt.decode(token, options={"verify_signature": False}), "kid": header["kid"]}


async def _encrypted_key(database_url: str, kid: str) -> bytes:
    url = database_url.replace("postgresql+asyncpg://", "postgresql://")
    connection = await asyncpg.connect(url)
    try:
        row = await connection.fetchrow(
            "SELECT private_key_encrypted FROM signing_keys WHERE kid = $1", kid
        )
    finally:
        await connection.close()
    assert row is not None, f"no signing key {kid}"
    encrypted: bytes = row["private_key_encrypted"]
    return encrypted


@pytest.fixture(scope="module")
def admin(http: httpx.Client, stack: LaunchedStack) -> str:
    return login(http, stack, "default", ADMIN_PASSWORD)


@pytest.fixture(scope="module")
def stolen(stack: LaunchedStack, databases_of_stack: dict[str, str], admin: str) -> TokenSigner:
    """The stack's current signing key, as whoever read its database and secrets has it."""
    claims = claims_of(admin)
    stored = json.loads((stack.data_dir / "secrets.json").read_text())
    fernet_keys = stored["generated"]["identity"]["SIGNING_KEY_ENCRYPTION_KEYS"].split(",")
    fernet = MultiFernet([Fernet(key) for key in fernet_keys])
    encrypted = asyncio.run(_encrypted_key(databases_of_stack["identity"], claims["kid"]))
    private_key = private_key_from_pem(fernet.decrypt(encrypted))
    return TokenSigner(private_key, kid=claims["kid"], issuer=claims["iss"])


def forge(signer: TokenSigner, like: str, **changes: Any) -> str:
    """A token like ``like`` (its subject, audience, name and admin flag), signed by
    ``signer``, with ``changes`` to the arguments of :meth:`TokenSigner.issue`."""
    claims = claims_of(like)
    arguments: dict[str, Any] = {
        "subject": claims["sub"],
        "kind": TokenKind.ACCESS,
        "audience": claims["aud"],
        "lifetime": timedelta(hours=1),
        "extra": {"name": claims["name"], "admin": claims["admin"]},
    }
    arguments.update(changes)
    token, _ = signer.issue(**arguments)
    return token


def test_a_token_signed_with_the_stacks_key_is_accepted_everywhere(
    http: httpx.Client, stack: LaunchedStack, stolen: TokenSigner, admin: str
):
    """What the refusals below are measured against: the forging itself works."""
    assert statuses(http, stack, forge(stolen, admin)) == everywhere(200)


def test_a_deleted_users_tokens_are_refused_everywhere_whenever_signed(
    http: httpx.Client, stack: LaunchedStack, stolen: TokenSigner, admin: str
):
    password = secrets.token_urlsafe(16)
    created = http.post(
        stack.url("platform", "/api/v1/users"),
        json={"name": "leaving", "is_admin": False, "active": True, "password": password},
        headers=bearer(admin),
    )
    assert created.status_code == 200, created.text
    own = login(http, stack, "leaving", password)
    assert statuses(http, stack, own) == everywhere(200)

    deleted = http.delete(stack.url("platform", "/api/v1/users/leaving"), headers=bearer(admin))
    assert deleted.status_code == 200, deleted.text
    forged = forge(stolen, own)  # issued after the deletion

    def refused_everywhere(token: str) -> Callable[[], bool]:
        return lambda: statuses(http, stack, token) == everywhere(401)

    for token in (own, forged):
        wait_for(refused_everywhere(token), "the deleted user's token refused everywhere", 5.0)


def test_a_device_token_without_its_device_id_is_refused_everywhere(
    http: httpx.Client, stack: LaunchedStack, stolen: TokenSigner, admin: str
):
    without_device = forge(stolen, admin, kind=TokenKind.DEVICE)
    assert statuses(http, stack, without_device) == everywhere(401)


def test_a_token_signed_by_another_key_is_refused_everywhere(
    http: httpx.Client, stack: LaunchedStack, admin: str
):
    claims = claims_of(admin)
    stranger = TokenSigner(generate_signing_key(), kid=claims["kid"], issuer=claims["iss"])
    assert statuses(http, stack, forge(stranger, admin)) == everywhere(401)


def test_an_expired_token_is_refused_everywhere(
    http: httpx.Client, stack: LaunchedStack, stolen: TokenSigner, admin: str
):
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    expired = forge(stolen, admin, lifetime=timedelta(minutes=5), now=an_hour_ago)
    assert statuses(http, stack, expired) == everywhere(401)


def test_a_logged_out_token_is_refused_everywhere(http: httpx.Client, stack: LaunchedStack):
    token = login(http, stack, "default", ADMIN_PASSWORD)
    assert statuses(http, stack, token) == everywhere(200)
    logout = http.get(stack.url("platform", "/api/v1/logout"), headers=bearer(token))
    assert logout.status_code == 200
    assert statuses(http, stack, token) == everywhere(401)


def every_log(stack: LaunchedStack) -> str:
    """The launcher's log (every service's lines) and every file under the data dir."""
    texts = [stack.output()]
    for path in stack.data_dir.rglob("*"):
        if path.is_file() and path.name != "secrets.json":
            try:
                texts.append(path.read_bytes().decode(errors="replace"))
            except OSError:
                continue  # a file of the embedded servers' that is not ours to read
    return "\n".join(texts)


def test_a_password_typed_as_the_name_is_in_no_log(http: httpx.Client, stack: LaunchedStack):
    typed = f"Typed-{secrets.token_urlsafe(12)}"
    failed = http.post(
        stack.url("platform", "/api/v1/login"), data={"username": typed, "password": "x"}
    )
    assert failed.status_code == 401
    # Routine lines are written in batches: wait for this attempt's own line.
    wait_for(
        lambda: "login failed {" in stack.output(),
        "identity's line about the failed login",
        within=10,
    )
    assert typed not in every_log(stack)


def exchanges_asked(http: httpx.Client, stack: LaunchedStack) -> float:
    """Exchanges of API keys identity answered, on all its processes."""
    total = 0.0
    for port in stack.metrics_ports["identity"]:
        text = http.get(f"http://127.0.0.1:{port}/metrics").text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if (
                    sample.name == "platform_http_requests_total"
                    and sample.labels.get("route") == EXCHANGE_ROUTE
                ):
                    total += sample.value
    return total


def test_random_api_keys_from_one_address_stop_reaching_identity(
    http: httpx.Client, stack: LaunchedStack
):
    """Runs last: it gets this address throttled at identity."""
    before = exchanges_asked(http, stack)
    answers: set[int] = set()
    for _ in range(50):
        key = EncodedKey(id=uuid.uuid4(), key=base64.b64encode(secrets.token_bytes(32)).decode())
        for service in ("tracking", "webhooks"):
            response = http.get(
                stack.url("platform", PROTECTED[service]), headers=bearer(key.encode())
            )
            answers.add(response.status_code)
            if response.status_code == 429:
                assert int(response.headers["Retry-After"]) >= 1
    asked = exchanges_asked(http, stack) - before
    assert answers <= {401, 429}
    assert 429 in answers
    # Identity's login throttle locks the address out after 10 failures; tracking and
    # webhooks then stop asking until it lets them again.
    assert asked <= 20, f"identity was asked {asked:g} times for 100 random keys"
