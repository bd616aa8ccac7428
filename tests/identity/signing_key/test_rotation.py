"""Signing keys: encrypted at rest, rotated without downtime, retired after retention."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx
import jwt
import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr
from sqlalchemy import text

from identity.app import create_app
from identity.settings import Settings
from identity.signing_key.service import SigningKeyService
from shared.db import session_scope
from tests.identity.conftest import Clock, Login, bearer, make_settings
from tests.support.asgi import LifespanApp, running


@pytest.fixture
def identity_settings(database_url: str, redis_url: str, redis_namespace: str) -> Settings:
    # The key ring re-reads the keys often, so the background test sees a rotation soon.
    return make_settings(
        database_url,
        redis_url,
        redis_namespace,
        signing_key_refresh_interval=timedelta(seconds=0.05),
    )


async def _rotate(identity_app: LifespanApp) -> str:
    async with session_scope(identity_app.state["sessionmaker"]) as session:
        key = await SigningKeyService(
            session, identity_app.state["settings"], identity_app.state["clock"]
        ).rotate()
    await identity_app.state["keyring"].load()
    return key.kid


async def _activate(identity_app: LifespanApp, clock: Clock) -> None:
    """Past the rotated-in key's publication delay, and the key ring told."""
    clock.advance(
        seconds=identity_app.state["settings"].signing_key_activation_delay.total_seconds()
    )
    await identity_app.state["keyring"].load()


async def test_jwks_publishes_public_keys_only(identity: httpx.AsyncClient):
    response = await identity.get("/.well-known/jwks.json")
    assert response.status_code == 200
    (key,) = response.json()["keys"]
    assert key["kty"] == "OKP"
    assert key["crv"] == "Ed25519"
    assert key["alg"] == "EdDSA"
    assert "d" not in key


async def test_private_keys_are_encrypted_at_rest(identity_app: LifespanApp):
    async with identity_app.state["engine"].connect() as conn:
        stored = (
            await conn.execute(text("SELECT private_key_encrypted FROM signing_keys"))
        ).scalar_one()
    assert b"PRIVATE KEY" not in bytes(stored)


async def test_rotation_keeps_old_tokens_verifying_everywhere(
    identity: httpx.AsyncClient,
    identity_app: LifespanApp,
    other_service: httpx.AsyncClient,
    login: Login,
    clock: Clock,
):
    old = await login()
    assert (await other_service.get("/whoami", headers=bearer(old))).status_code == 200
    new_kid = await _rotate(identity_app)
    # Published at once, signing only after the delay.
    keys = (await identity.get("/.well-known/jwks.json")).json()["keys"]
    assert {k["kid"] for k in keys} >= {new_kid}
    assert len(keys) == 2
    assert jwt.get_unverified_header(await login())["kid"] != new_kid
    await _activate(identity_app, clock)
    new = await login()
    assert jwt.get_unverified_header(new)["kid"] == new_kid
    assert jwt.get_unverified_header(old)["kid"] != new_kid
    for token in (old, new):
        assert (
            await identity.get("/api/v1/current-user", headers=bearer(token))
        ).status_code == 200
        # The other service cached the JWKS before the rotation and learns the new kid.
        answer = await other_service.get("/whoami", headers=bearer(token))
        assert answer.status_code == 200, answer.text


async def test_retired_key_stops_verifying_after_its_retention(
    identity: httpx.AsyncClient, identity_app: LifespanApp, login: Login, clock: Clock
):
    old = await login()
    await _rotate(identity_app)
    await _activate(identity_app, clock)
    # Past the old key's retention without moving the clock, which would expire the token.
    async with identity_app.state["engine"].begin() as conn:
        await conn.execute(
            text("UPDATE signing_keys SET expires_at = :past WHERE expires_at IS NOT NULL"),
            {"past": datetime(2000, 1, 1, tzinfo=UTC)},
        )
    await identity_app.state["keyring"].load()
    assert len((await identity.get("/.well-known/jwks.json")).json()["keys"]) == 1
    response = await identity.get("/api/v1/current-user", headers=bearer(old))
    assert response.status_code == 401


async def test_key_older_than_the_interval_is_rotated_at_start(
    database_url: str, redis_url: str, redis_namespace: str, clock: Clock
):
    settings = make_settings(database_url, redis_url, redis_namespace)
    async with running(create_app(settings, clock=clock)) as first:
        first_kid = (await first.state["keyring"].signer()).kid
    clock.advance(seconds=settings.signing_key_rotation_interval.total_seconds())
    async with running(create_app(settings, clock=clock)) as second:
        # The replacement is published first; the old key signs until it activates.
        assert (await second.state["keyring"].signer()).kid == first_kid
        assert len((await second.state["keyring"].jwks())["keys"]) == 2
        clock.advance(seconds=settings.signing_key_activation_delay.total_seconds())
        await second.state["keyring"].load()
        assert (await second.state["keyring"].signer()).kid != first_kid


async def test_encryption_key_rotation_reencrypts_under_the_new_key(
    database_url: str, redis_url: str, redis_namespace: str
):
    settings = make_settings(database_url, redis_url, redis_namespace)
    async with running(create_app(settings)) as app:
        kid = (await app.state["keyring"].signer()).kid
    old_key = settings.signing_key_encryption_keys.get_secret_value()
    new_key = Fernet.generate_key().decode()
    both = settings.model_copy(
        update={"signing_key_encryption_keys": SecretStr(f"{new_key},{old_key}")}
    )
    async with running(create_app(both)):
        pass
    # Now under the new key: a later start rewrites nothing.
    async with running(create_app(both)) as app, session_scope(app.state["sessionmaker"]) as s:
        assert await SigningKeyService(s, both).reencrypt() == 0
    only_new = settings.model_copy(update={"signing_key_encryption_keys": SecretStr(new_key)})
    async with running(create_app(only_new)) as app:
        assert (await app.state["keyring"].signer()).kid == kid


async def test_wrong_encryption_key_fails_start_clearly(
    database_url: str, redis_url: str, redis_namespace: str
):
    settings = make_settings(database_url, redis_url, redis_namespace)
    async with running(create_app(settings)):
        pass
    wrong = settings.model_copy(
        update={"signing_key_encryption_keys": SecretStr(Fernet.generate_key().decode())}
    )
    with pytest.raises(RuntimeError, match="cannot be decrypted"):
        async with running(create_app(wrong)):
            pass


def test_settings_require_an_encryption_key():
    with pytest.raises(ValueError, match="Fernet"):
        Settings(signing_key_encryption_keys=SecretStr(" , "))


async def test_key_ring_picks_up_a_rotation_in_the_background(
    identity_app: LifespanApp, login: Login, clock: Clock
) -> None:
    kid = await _rotate(identity_app)
    clock.advance(
        seconds=identity_app.state["settings"].signing_key_activation_delay.total_seconds()
    )
    # Nothing here reloads the key ring: its refresh task (every 50 ms, real time) does.
    keyring = identity_app.state["keyring"]
    async with asyncio.timeout(5):
        while (await keyring.signer()).kid != kid:  # noqa: ASYNC110  (a task of the app's)
            await asyncio.sleep(0.05)
    assert jwt.get_unverified_header(await login())["kid"] == kid
