"""Device tests poll every second instead of every five."""

from __future__ import annotations

from datetime import timedelta

import pytest

from identity.settings import Settings
from tests.identity.conftest import make_settings

POLL_INTERVAL = 1


@pytest.fixture
def identity_settings(database_url: str, redis_url: str, redis_namespace: str) -> Settings:
    return make_settings(
        database_url,
        redis_url,
        redis_namespace,
        device_auth_polling_interval=timedelta(seconds=POLL_INTERVAL),
    )
