"""The API-key grant is throttled as the password grant is: per key and per client."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from identity.settings import Settings
from tests.identity.api_key.support import create_account, create_key, encoded, key_login
from tests.identity.conftest import Login, make_settings


@pytest.fixture
def identity_settings(database_url: str, redis_url: str, redis_namespace: str) -> Settings:
    return make_settings(
        database_url,
        redis_url,
        redis_namespace,
        login_account_failure_threshold=3,
        login_client_failure_threshold=6,
        login_lockout_base=timedelta(seconds=30),
    )


async def test_wrong_secrets_lock_the_key_out_even_for_the_right_one(
    identity: httpx.AsyncClient, login: Login
):
    admin = await login()
    account = await create_account(identity, admin)
    created = await create_key(identity, admin, account["id"])
    forged = encoded(created["id"], "0" * 64)
    answers = [(await key_login(identity, forged)).status_code for _ in range(3)]
    assert answers == [401, 401, 401]
    locked = await key_login(identity, created["body"]["key"])
    assert locked.status_code == 429
    assert int(locked.headers["retry-after"]) >= 1


async def test_undecodable_keys_count_against_the_client(identity: httpx.AsyncClient):
    answers = [(await key_login(identity, "ZENKEY_garbage")).status_code for _ in range(7)]
    assert answers == [401] * 6 + [429]
