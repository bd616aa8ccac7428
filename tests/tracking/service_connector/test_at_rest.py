"""Service connectors' credentials at rest: one token under the secrets' keys, apart from
the plain configuration, and rotated by ``python -m tracking.reencrypt``."""

from __future__ import annotations

import uuid

import httpx
from cryptography.fernet import Fernet
from pydantic import SecretStr
from sqlmodel import select

from shared.secret_box import SecretBox
from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers
from tests.tracking.conftest import COMPONENT_SECRET_KEYS
from tests.tracking.service_connector.support import create
from tracking.component.secrets import ComponentSecrets
from tracking.models import ServiceConnector
from tracking.reencrypt import reencrypt
from tracking.secret.service import SecretCipher

MARKER = "marker-connector-do-not-store-in-clear"


async def stored(app: LifespanApp, connector_id: str) -> ServiceConnector:
    async with app.state["sessionmaker"]() as session:
        query = select(ServiceConnector).where(ServiceConnector.id == uuid.UUID(connector_id))
        row: ServiceConnector = (await session.exec(query)).one()
        return row


async def test_secret_fields_are_one_token_and_the_rest_stays_plain(
    tracking: httpx.AsyncClient, tracking_app: LifespanApp, auth: Headers
) -> None:
    created = await create(tracking, auth, configuration={"username": "ann", "password": MARKER})
    row = await stored(tracking_app, created["id"])
    assert row.configuration == {}
    assert row.encrypted_secrets is not None
    assert MARKER not in row.encrypted_secrets
    cipher = SecretCipher(SecretBox(SecretStr(COMPONENT_SECRET_KEYS)))
    assert cipher.open(row.id, row.encrypted_secrets) == {"username": "ann", "password": MARKER}


async def test_reencrypt_rewrites_the_credentials_under_the_new_key(
    tracking: httpx.AsyncClient, tracking_app: LifespanApp, auth: Headers
) -> None:
    created = await create(tracking, auth)
    await create(
        tracking,
        auth,
        name="no-secrets",
        connector_type="aws",
        auth_method="implicit",
        resource_types=[],
        configuration={"region": "eu-west-1"},
    )
    new = Fernet.generate_key().decode()
    box = SecretBox(SecretStr(f"{new},{COMPONENT_SECRET_KEYS}"))
    sessionmaker = tracking_app.state["sessionmaker"]
    done = await reencrypt(sessionmaker, ComponentSecrets(box), SecretCipher(box))
    assert done.connectors == 1  # the one with credentials
    again = await reencrypt(sessionmaker, ComponentSecrets(box), SecretCipher(box))
    assert again.connectors == 0
    row = await stored(tracking_app, created["id"])
    assert row.encrypted_secrets is not None
    only_new = SecretCipher(SecretBox(SecretStr(new)))
    assert only_new.open(row.id, row.encrypted_secrets)["password"] == "s3cret"
