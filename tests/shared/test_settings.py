"""The settings base every service extends."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from pydantic import ValidationError

from shared.settings import DEFAULT_SERVER_ID, ServiceSettings


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u:p@db:5432/platform", "postgresql+asyncpg://u:p@db:5432/platform"),
        ("postgres://u@db/platform", "postgresql+asyncpg://u@db/platform"),
        ("postgresql+asyncpg://u@db/platform", "postgresql+asyncpg://u@db/platform"),
    ],
)
def test_database_url_gets_the_async_driver(given, expected):
    assert ServiceSettings(database_url=given).database_url == expected


def test_the_default_database_is_postgresql(monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    assert ServiceSettings().database_url == "postgresql+asyncpg://postgres@127.0.0.1:5432/service"


@pytest.mark.parametrize(
    "given", ["sqlite:///./data/x.db", "sqlite+aiosqlite:///x.db", "mysql://u@db/platform"]
)
def test_a_database_other_than_postgresql_is_refused(given):
    with pytest.raises(ValidationError, match="PostgreSQL only"):
        ServiceSettings(database_url=given)


def test_settings_are_read_from_upper_case_environment_names(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://env@db/platform")
    monkeypatch.setenv("HTTP_RETRIES", "4")
    monkeypatch.setenv("JWKS_CACHE_TTL", "PT2M")
    settings = ServiceSettings()
    assert settings.database_url == "postgresql+asyncpg://env@db/platform"
    assert settings.http_retries == 4
    assert settings.jwks_cache_ttl == timedelta(minutes=2)


def test_client_secret_is_kept_out_of_repr():
    settings = ServiceSettings(service_client_secret="s3cret-value")
    assert "s3cret-value" not in repr(settings)
    assert settings.service_client_secret is not None
    assert settings.service_client_secret.get_secret_value() == "s3cret-value"


def test_session_cookie_name_follows_the_server_id():
    server_id = uuid.uuid4()
    assert ServiceSettings(server_id=server_id).session_cookie_name == f"zenml-server-{server_id}"
    assert ServiceSettings().session_cookie_name == f"zenml-server-{DEFAULT_SERVER_ID}"


@pytest.mark.parametrize(
    "values", [{"max_body_size": 100}, {"http_retries": 11}, {"environment": "staging"}]
)
def test_out_of_range_settings_are_refused(values):
    with pytest.raises(ValidationError):
        ServiceSettings(**values)
