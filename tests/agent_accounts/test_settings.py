from __future__ import annotations

import os
from datetime import timedelta

import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr, ValidationError

from agent_accounts.core.keys import load_keys
from agent_accounts.settings import Settings

SIGNING = SecretStr("x" * 43)


def test_secret_encryption_key_must_be_fernet_keys():
    with pytest.raises(ValidationError, match="key #2 is not a Fernet key"):
        Settings(
            jwt_signing_keys=SIGNING,
            server_secret_encryption_key=SecretStr(f"{Fernet.generate_key().decode()},nope"),
        )


def test_secret_cipher_encrypts_with_the_first_key_and_decrypts_with_all():
    old, new = Fernet.generate_key(), Fernet.generate_key()
    sealed = Fernet(old).encrypt(b"secret")
    settings = Settings(
        jwt_signing_keys=SIGNING,
        server_secret_encryption_key=SecretStr(f"{new.decode()}, {old.decode()}"),
    )

    cipher = settings.secret_cipher()
    assert cipher is not None
    assert cipher.decrypt(sealed) == b"secret"
    assert Fernet(new).decrypt(cipher.encrypt(b"x")) == b"x"
    assert Settings(jwt_signing_keys=SIGNING).secret_cipher() is None


@pytest.fixture
def kitaru_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """An environment holding no setting of this service under either name."""
    for name in list(os.environ):
        if name.upper().startswith(("SERVICE_", "KITARU_")):
            monkeypatch.delenv(name)
    return monkeypatch


def test_a_kitaru_operators_environment_configures_the_server(
    kitaru_environment: pytest.MonkeyPatch,
):
    for name, value in {
        "KITARU_SERVER_AUTH_SCHEME": "none",
        "KITARU_SERVER_DEFAULT_ACCOUNT_PASSWORD": "from-kitaru",
        "KITARU_SERVER_JWT_SIGNING_KEY": "an HS256 secret of kitaru's",
        "KITARU_SERVER_SECRET_ENCRYPTION_KEY": "a free-form kitaru key",
        "KITARU_SERVER_JWT_LIFETIME_SECONDS": "600",
        "KITARU_SERVER_DEVICE_AUTH_POLLING_INTERVAL_SECONDS": "7",
        "KITARU_SERVER_DASHBOARD_URL": "https://agents.example",
    }.items():
        kitaru_environment.setenv(name, value)

    settings = Settings()

    assert settings.server_auth_scheme == "none"
    assert settings.server_default_account_password is not None
    assert settings.server_default_account_password.get_secret_value() == "from-kitaru"
    assert settings.session_token_lifetime == timedelta(minutes=10)
    assert settings.server_device_auth_polling_interval_seconds == 7
    assert settings.dashboard_url == "https://agents.example"
    # Keys derived from kitaru's secrets, the same in every process.
    load_keys(settings.jwt_signing_keys.get_secret_value(), issuer="agent-accounts")
    assert settings.jwt_signing_keys == Settings().jwt_signing_keys
    cipher, again = settings.secret_cipher(), Settings().secret_cipher()
    assert cipher is not None
    assert again is not None
    assert again.decrypt(cipher.encrypt(b"secret")) == b"secret"


def test_a_kitaru_fernet_key_is_used_as_given(kitaru_environment: pytest.MonkeyPatch):
    key = Fernet.generate_key()
    kitaru_environment.setenv("KITARU_SERVER_SECRET_ENCRYPTION_KEY", key.decode())

    cipher = Settings(jwt_signing_keys=SIGNING).secret_cipher()

    assert cipher is not None
    assert Fernet(key).decrypt(cipher.encrypt(b"x")) == b"x"


def test_service_names_win_over_kitaru_names(kitaru_environment: pytest.MonkeyPatch):
    kitaru_environment.setenv("KITARU_SERVER_AUTH_SCHEME", "none")
    kitaru_environment.setenv("SERVICE_SERVER_AUTH_SCHEME", "local")
    kitaru_environment.setenv("KITARU_SERVER_DEFAULT_ACCOUNT_NAME", "kitaru-admin")
    kitaru_environment.setenv("SERVICE_SERVER_DEFAULT_ACCOUNT_NAME", "service-admin")
    kitaru_environment.setenv("KITARU_SERVER_JWT_SIGNING_KEY", "kitaru's secret")
    kitaru_environment.setenv("SERVICE_JWT_SIGNING_KEYS", SIGNING.get_secret_value())

    settings = Settings()

    assert settings.server_auth_scheme == "local"
    assert settings.server_default_account_name == "service-admin"
    assert settings.jwt_signing_keys == SIGNING
