"""Secrets' values at rest and on the way: encrypted in their row, rotated to a new key
without downtime, and never in a log line, a metric, a trace or Redis."""

from __future__ import annotations

import logging
import uuid

import httpx
import prometheus_client
import pytest
from cryptography.fernet import Fernet
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import SecretStr
from sqlmodel import select

from shared.redis import create_redis
from shared.secret_box import SecretBox
from tests.support.asgi import HostRouter, LifespanApp, running
from tests.tracking.artifact.support import Headers
from tests.tracking.conftest import COMPONENT_SECRET_KEYS
from tests.tracking.secret.support import SECRETS, create_secret
from tracking.app import create_app
from tracking.component.secrets import ComponentSecrets
from tracking.models import Secret
from tracking.reencrypt import reencrypt
from tracking.secret.service import SecretCipher
from tracking.settings import Settings

MARKER = "marker-7f3c9e-do-not-log"


async def stored(app: LifespanApp, secret_id: str) -> Secret:
    async with app.state["sessionmaker"]() as session:
        query = select(Secret).where(Secret.id == uuid.UUID(secret_id))
        row: Secret = (await session.exec(query)).one()
        return row


def cipher_of(keys: str) -> SecretCipher:
    return SecretCipher(SecretBox(SecretStr(keys)))


async def test_values_are_one_token_in_the_row_and_no_plaintext(
    tracking: httpx.AsyncClient, tracking_app: LifespanApp, auth: Headers
) -> None:
    created = await create_secret(tracking, auth, "db", {"password": MARKER})
    row = await stored(tracking_app, created["id"])
    assert MARKER not in row.encrypted_values
    assert "password" not in row.encrypted_values  # keys too
    assert cipher_of(COMPONENT_SECRET_KEYS).open(row.id, row.encrypted_values) == {
        "password": MARKER
    }


async def test_a_new_key_in_front_then_reencrypt_lets_the_old_key_go(
    tracking: httpx.AsyncClient,
    tracking_app: LifespanApp,
    tracking_settings: Settings,
    router: HostRouter,
    auth: Headers,
) -> None:
    created = await create_secret(tracking, auth, "db", {"password": MARKER})
    new = Fernet.generate_key().decode()
    both = f"{new},{COMPONENT_SECRET_KEYS}"
    # Replicas with the new key in front keep reading what the old key encrypted.
    rotated_settings = tracking_settings.model_copy(
        update={"component_secret_keys": SecretStr(both)}
    )
    async with running(create_app(rotated_settings, http_transport=router)) as rotated:
        transport = httpx.ASGITransport(app=rotated)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            one = await client.get(f"{SECRETS}/{created['id']}", headers=auth)
            assert one.json()["body"]["values"] == {"password": MARKER}
    sessionmaker = tracking_app.state["sessionmaker"]
    box = SecretBox(SecretStr(both))
    done = await reencrypt(sessionmaker, ComponentSecrets(box), SecretCipher(box))
    assert done.secrets == 1
    again = await reencrypt(sessionmaker, ComponentSecrets(box), SecretCipher(box))
    assert again.secrets == 0  # already under the new key
    row = await stored(tracking_app, created["id"])
    assert cipher_of(new).open(row.id, row.encrypted_values) == {"password": MARKER}
    assert row.updated.isoformat().startswith(created["body"]["updated"][:19])


async def test_without_keys_there_is_no_secrets_store(
    keyless_tracking: httpx.AsyncClient, auth: Headers
) -> None:
    for response in (
        await keyless_tracking.get(SECRETS, headers=auth),
        await keyless_tracking.post(SECRETS, json={"name": "n"}, headers=auth),
        await keyless_tracking.get(f"{SECRETS}/{uuid.uuid4()}", headers=auth),
    ):
        assert response.status_code == 501
        assert response.json()["detail"][0] == "NotImplementedError"


async def test_values_never_reach_logs_metrics_traces_or_redis(
    tracking: httpx.AsyncClient,
    auth: Headers,
    caplog: pytest.LogCaptureFixture,
    spans: InMemorySpanExporter,
    redis_url: str,
    redis_namespace: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    key = {"Idempotency-Key": str(uuid.uuid4())}
    created = await tracking.post(
        SECRETS, json={"name": "db", "values": {"password": MARKER}}, headers={**auth, **key}
    )
    assert created.status_code == 200, created.text
    one = f"{SECRETS}/{created.json()['id']}"
    calls = [
        # A retry of the create: its first answer is replayed, kept encrypted in Redis.
        tracking.post(
            SECRETS, json={"name": "db", "values": {"password": MARKER}}, headers={**auth, **key}
        ),
        tracking.get(one, headers=auth),
        tracking.get(SECRETS, params={"name": "db", "hydrate": "true"}, headers=auth),
        tracking.put(
            one, params={"patch_values": "true"}, json={"values": {"k": MARKER}}, headers=auth
        ),
        tracking.put(one, json={"values": {"k": MARKER * 5000}}, headers=auth),
        tracking.put(one, json={"values": {"k": [MARKER]}}, headers=auth),
        tracking.post(SECRETS, json={"name": "db", "values": {"p": MARKER}}, headers=auth),
        tracking.post(
            SECRETS, content=b'{"name": "x", "values": {"p": "' + MARKER.encode(), headers=auth
        ),
        tracking.put(one, json={"values": {"password": MARKER}}, headers=auth),
    ]
    replay = await calls.pop(0)
    assert replay.headers["idempotent-replayed"] == "true"
    assert replay.json() == created.json()
    for call in calls:
        response = await call
        assert response.status_code < 500, response.text
        if response.status_code >= 400:
            assert MARKER not in response.text
    assert MARKER not in caplog.text
    for record in caplog.records:
        assert MARKER not in str(record.__dict__)
    assert MARKER not in prometheus_client.generate_latest().decode()
    for span in spans.get_finished_spans():
        assert MARKER not in span.to_json()
    redis = create_redis(redis_url)
    try:
        names = [name async for name in redis.scan_iter(match=f"{redis_namespace}:*")]
        assert names  # the idempotency record of the create, at least
        for name in names:
            assert MARKER.encode() not in (name if isinstance(name, bytes) else name.encode())
            if await redis.type(name) in (b"string", "string"):
                assert MARKER.encode() not in (await redis.get(name) or b"")
    finally:
        await redis.aclose()
