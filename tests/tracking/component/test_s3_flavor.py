"""The s3 artifact store flavor: its configuration as the reference validates it, and its
secret fields (key, secret, token) encrypted at rest and masked in every answer."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr, ValidationError
from sqlmodel import select

from shared.errors import BadRequest
from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers
from tests.tracking.component.support import COMPONENTS
from tests.tracking.conftest import COMPONENT_SECRET_KEYS
from tracking.component.flavors import flavor_for
from tracking.component.secrets import MASK, ComponentSecrets
from tracking.models import StackComponent
from tracking.reencrypt import reencrypt
from tracking.secret.service import SecretCipher
from tracking.settings import Settings

KEY, SECRET, TOKEN = "AKIAPLAINTEXTKEY0001", "plaintext-secret-access-key", "plaintext-token"
SECRETS = (KEY, SECRET, TOKEN)


def s3_configuration(**extra: Any) -> dict[str, Any]:
    return {
        "path": "s3://bucket/store",
        "key": KEY,
        "secret": SECRET,
        "token": TOKEN,
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:9000", "region_name": "eu-west-1"},
        **extra,
    }


async def post_s3(
    tracking: httpx.AsyncClient, auth: Headers, configuration: dict[str, Any], name: str = "s3"
) -> httpx.Response:
    body = {"name": name, "type": "artifact_store", "flavor": "s3", "configuration": configuration}
    return await tracking.post(COMPONENTS, json=body, headers=auth)


async def stored_row(app: LifespanApp, component_id: str) -> StackComponent:
    async with app.state["sessionmaker"]() as session:
        query = select(StackComponent).where(StackComponent.id == component_id)
        row: StackComponent = (await session.exec(query)).one()
        return row


def assert_no_secret_in(response: httpx.Response) -> None:
    assert response.status_code == 200, response.text
    for secret in SECRETS:
        assert secret not in response.text


async def test_create_answers_the_secrets_masked(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await post_s3(tracking, auth, s3_configuration())
    assert_no_secret_in(response)
    component = response.json()
    assert component["metadata"]["configuration"] == {
        **s3_configuration(),
        "key": MASK,
        "secret": MASK,
        "token": MASK,
    }
    assert (component["body"]["flavor_name"], component["body"]["integration"]) == ("s3", "s3")
    flavor = component["resources"]["flavor"]["body"]
    assert flavor["source"] == (
        "zenml.integrations.s3.flavors.s3_artifact_store_flavor.S3ArtifactStoreFlavor"
    )


async def test_secrets_are_masked_in_every_answer(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    created = await post_s3(tracking, auth, s3_configuration())
    component_id = created.json()["id"]
    orchestrator = await tracking.get(
        COMPONENTS, params={"type": "orchestrator", "name": "default"}, headers=auth
    )
    stack = await tracking.post(
        "/api/v1/stacks",
        json={
            "name": "on-s3",
            "components": {
                "artifact_store": [component_id],
                "orchestrator": [orchestrator.json()["items"][0]["id"]],
            },
        },
        headers=auth,
    )
    answers = [
        stack,
        await tracking.get(f"{COMPONENTS}/{component_id}", headers=auth),
        await tracking.get(COMPONENTS, params={"hydrate": "true"}, headers=auth),
        await tracking.get(f"/api/v1/stacks/{stack.json()['id']}?hydrate=true", headers=auth),
        await tracking.put(f"{COMPONENTS}/{component_id}", json={"name": "s3b"}, headers=auth),
    ]
    for answer in answers:
        assert_no_secret_in(answer)
    assert MASK in answers[2].text


async def test_secrets_are_encrypted_in_the_row(
    tracking: httpx.AsyncClient, tracking_app: LifespanApp, auth: Headers
) -> None:
    created = await post_s3(tracking, auth, s3_configuration())
    row = await stored_row(tracking_app, created.json()["id"])
    raw = json.dumps([row.configuration, row.encrypted_secrets])
    for secret in SECRETS:
        assert secret not in raw
    assert set(row.configuration) == {"path", "client_kwargs"}
    fernet = Fernet(COMPONENT_SECRET_KEYS)
    clear = {k: fernet.decrypt(v).decode() for k, v in row.encrypted_secrets.items()}
    assert clear == {"key": KEY, "secret": SECRET, "token": TOKEN}


async def test_an_update_sending_the_mask_back_keeps_the_secret(
    tracking: httpx.AsyncClient, tracking_app: LifespanApp, auth: Headers
) -> None:
    created = (await post_s3(tracking, auth, s3_configuration())).json()
    url = f"{COMPONENTS}/{created['id']}"
    before = (await stored_row(tracking_app, created["id"])).encrypted_secrets
    # What a client does: read the configuration, change one field, send it all back.
    configuration = {**created["metadata"]["configuration"], "path": "s3://bucket/other"}
    configuration.pop("token")
    updated = await tracking.put(url, json={"configuration": configuration}, headers=auth)
    assert_no_secret_in(updated)
    assert updated.json()["metadata"]["configuration"]["path"] == "s3://bucket/other"
    after = (await stored_row(tracking_app, created["id"])).encrypted_secrets
    assert after == {"key": before["key"], "secret": before["secret"]}  # token left out

    changed = await tracking.put(
        url, json={"configuration": {**configuration, "key": "AKIANEWKEY"}}, headers=auth
    )
    assert changed.status_code == 200, changed.text
    row = await stored_row(tracking_app, created["id"])
    assert Fernet(COMPONENT_SECRET_KEYS).decrypt(row.encrypted_secrets["key"]) == b"AKIANEWKEY"
    assert row.encrypted_secrets["secret"] == before["secret"]


@pytest.mark.parametrize(
    ("configuration", "message"),
    [
        (
            {"path": "gs://bucket"},
            "The path: 'gs://bucket' you defined for your artifact store is not supported by "
            "the implementation of S3ArtifactStoreConfig, because it does not start with one "
            "of its supported schemes: {'s3://'}.",
        ),
        ({"path": "s3://"}, "'s3://' is not an S3 path of the form s3://bucket[/prefix]."),
        ({"path": "s3://b/a/../c"}, "is not an S3 path of the form s3://bucket[/prefix]."),
        (
            {"path": "s3://b", "region": "eu-west-1"},
            "Invalid configuration keys ['region'] for s3 artifact_store.",
        ),
        (
            {"path": "s3://b", "client_kwargs": {"endpoint_url": "ftp://host"}},
            "Invalid URL for endpoint url: ftp://host. Should be in the form "
            "https://hostname[:port] or http://hostname[:port].",
        ),
        ({"path": "s3://b", "client_kwargs": "{not json"}, "Invalid json string '{not json'"),
        ({"path": "s3://b", "config_kwargs": "[1]"}, "did not decode into a dictionary."),
        ({"path": "s3://b", "key": 12}, "key: Input should be a valid string"),
        ({"path": "s3://b", "client_kwargs": 5}, "client_kwargs: Input should be a valid"),
        ({"path": "s3://b", "authentication_secret": "aws"}, "not resolve an authentication"),
        (
            {"path": "s3://b", "client_kwargs": {"aws_secret_access_key": "x"}},
            "aws_secret_access_key may not be given in client_kwargs",
        ),
        ({}, "path: Field required"),
    ],
)
def test_bad_configurations_are_refused(configuration: dict[str, Any], message: str) -> None:
    with pytest.raises(BadRequest) as raised:
        flavor_for("artifact_store", "s3").validate_config(configuration)
    assert message in raised.value.message


async def test_a_bad_configuration_is_a_400_value_error(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await post_s3(tracking, auth, {"path": "s3://", "key": KEY})
    assert response.status_code == 400, response.text
    assert response.json()["detail"] == [
        "ValueError",
        "Invalid configuration for the s3 artifact_store: path: Value error, 's3://' is not "
        "an S3 path of the form s3://bucket[/prefix].",
    ]
    masked = await post_s3(tracking, auth, {"path": "s3://b", "key": MASK})
    assert masked.status_code == 400
    assert "['key'] hold the mask of a stored secret" in masked.json()["detail"][1]


async def test_json_text_kwargs_and_quoted_paths_are_accepted_as_the_reference_does(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    configuration = {
        "path": "'s3://bucket/prefix'",
        "client_kwargs": json.dumps({"endpoint_url": "https://minio:9000"}),
    }
    response = await post_s3(tracking, auth, configuration)
    assert response.status_code == 200, response.text
    assert response.json()["metadata"]["configuration"] == {
        "path": "s3://bucket/prefix",
        "client_kwargs": {"endpoint_url": "https://minio:9000"},
    }


async def test_without_keys_secrets_are_refused_and_the_rest_accepted(
    keyless_tracking: httpx.AsyncClient, auth: Headers
) -> None:
    refused = await post_s3(keyless_tracking, auth, s3_configuration())
    assert refused.status_code == 403
    assert refused.json()["detail"] == [
        "IllegalOperationError",
        "This server cannot store the secret fields ['key', 'secret', 'token'] of a stack "
        "component: COMPONENT_SECRET_KEYS is not set. Set it, or leave these fields out and "
        "give the server its credentials through its environment.",
    ]
    plain = await post_s3(keyless_tracking, auth, {"path": "s3://bucket"}, name="plain")
    assert plain.status_code == 200, plain.text


def test_production_settings_demand_component_secret_keys() -> None:
    with pytest.raises(ValidationError, match="COMPONENT_SECRET_KEYS is required in production"):
        Settings(environment="production", download_token_secret=SecretStr("x" * 32))
    with pytest.raises(ValidationError, match="Fernet key"):
        Settings(component_secret_keys=SecretStr("not-a-key"))
    keys = SecretStr(Fernet.generate_key().decode())
    assert Settings(environment="production", component_secret_keys=keys).secret_box()


async def test_secrets_move_to_a_new_key_and_the_old_key_can_go(
    tracking: httpx.AsyncClient, tracking_app: LifespanApp, auth: Headers
) -> None:
    created = await post_s3(tracking, auth, s3_configuration())
    sessionmaker = tracking_app.state["sessionmaker"]
    new = Fernet.generate_key().decode()
    both = tracking_settings_keys(f"{new},{COMPONENT_SECRET_KEYS}")
    cipher = SecretCipher(both.box)
    assert (await reencrypt(sessionmaker, both, cipher)).components == 1
    again = await reencrypt(sessionmaker, both, cipher)
    assert again.components == 0  # already under the new key
    row = await stored_row(tracking_app, created.json()["id"])
    assert tracking_settings_keys(new).reveal(row) == {"key": KEY, "secret": SECRET, "token": TOKEN}


def tracking_settings_keys(keys: str) -> ComponentSecrets:
    return ComponentSecrets(Settings(component_secret_keys=SecretStr(keys)).secret_box())
