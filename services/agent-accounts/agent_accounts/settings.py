"""The agent-accounts service's settings: environment prefix ``SERVICE_``, and kitaru's
own ``KITARU_SERVER_*`` names for the settings the two servers share, so that a kitaru
operator's environment works unchanged. When a setting is given under both names, the
``SERVICE_`` one wins (the launcher and the deployments set those)."""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, Literal

from cryptography.fernet import Fernet, MultiFernet
from pydantic import Field, SecretStr, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from shared.passwords import PasswordHashSettings
from shared.settings import ServiceSettings
from shared.throttle import LoginThrottleSettings

AuthScheme = Literal["none", "local"]


KITARU_PREFIX = "KITARU_SERVER_"


def _seconds(raw: str) -> timedelta | str:
    """kitaru counts these in seconds; anything else is left for validation to refuse."""
    try:
        return timedelta(seconds=float(raw))
    except ValueError:
        return raw


def _derived_key(raw: str) -> str:
    """32 bytes derived from a secret string, as base64url: kitaru hashes its free-form
    keys with SHA-256 the same way."""
    return base64.urlsafe_b64encode(hashlib.sha256(raw.encode()).digest()).decode("ascii")


def _fernet_keys(raw: str) -> str:
    """Fernet keys are taken as they are; kitaru's free-form key string becomes one."""
    try:
        for key in raw.split(","):
            Fernet(key.strip())
    except ValueError:
        return _derived_key(raw)
    return raw


def _kitaru_names() -> dict[str, tuple[str, Callable[[str], Any]]]:
    """kitaru's setting name (after ``KITARU_SERVER_``) -> (our field, conversion)."""
    same = {
        name.removeprefix("server_").upper(): name
        for name in Settings.model_fields
        if name.startswith("server_") and name not in ("server_url", "server_id")
    }
    names: dict[str, tuple[str, Callable[[str], Any]]] = {
        kitaru: (field, str) for kitaru, field in same.items()
    }
    names.update(
        {
            "SERVER_URL": ("server_url", str),
            "SERVER_ID": ("server_id", str),
            "DASHBOARD_URL": ("dashboard_url", str),
            "DATABASE_URL": ("database_url", str),
            "JWT_ISSUER": ("jwt_issuer", str),
            "JWT_AUDIENCE": ("jwt_audience", str),
            "MAX_BLOB_SIZE_BYTES": ("max_blob_size_bytes", str),
            "JWT_LIFETIME_SECONDS": ("session_token_lifetime", _seconds),
            "WORKER_TOKEN_LIFETIME_SECONDS": ("worker_token_lifetime", _seconds),
            "TASK_TOKEN_EXPIRY_LEEWAY_SECONDS": ("task_token_expiry_leeway", _seconds),
            # kitaru signs with one HS256 secret; an Ed25519 key is derived from it, the
            # same on every replica.
            "JWT_SIGNING_KEY": ("jwt_signing_keys", lambda raw: _derived_key(raw).rstrip("=")),
            "SECRET_ENCRYPTION_KEY": ("server_secret_encryption_key", _fernet_keys),
        }
    )
    return names


class KitaruEnvironment(PydanticBaseSettingsSource):
    """The ``KITARU_SERVER_*`` variables of ``environ`` (the process environment unless
    given), as the fields they name."""

    def __init__(
        self, settings_cls: type[BaseSettings], environ: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(settings_cls)
        source = os.environ if environ is None else environ
        self.environ = {key.upper(): value for key, value in source.items()}

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for kitaru, (field, convert) in _kitaru_names().items():
            raw = self.environ.get(KITARU_PREFIX + kitaru)
            if raw is not None:
                values[field] = convert(raw)
        return values


class Settings(ServiceSettings, LoginThrottleSettings, PasswordHashSettings):
    # Passwords' argon2id cost: the `password_hash_*` fields of PasswordHashSettings
    # (shared.passwords), OWASP's by default; the tests lower it.
    # Login throttling (password, api-key and device-code grants): the `login_*` fields of
    # LoginThrottleSettings (shared.throttle), as SERVICE_LOGIN_*.
    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False, env_prefix="SERVICE_")

    service_name: str = "agent-accounts"
    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/agent-accounts"
    redis_namespace: str = "agent"

    # "none": local development only; every request runs as the default account.
    server_auth_scheme: AuthScheme = "local"
    server_default_account_name: str = "default"
    # Hashed when the default account is first created; later changes do nothing.
    server_default_account_password: SecretStr | None = None

    # Its own trust domain: its own issuer, audience and keys. Comma-separated Ed25519
    # private keys, each 32 random bytes in base64url (``secrets.token_urlsafe(32)``): the
    # first signs, all verify, so a new key goes in front and the old one is dropped once
    # its tokens have expired.
    jwt_signing_keys: SecretStr
    jwt_issuer: str = "agent-accounts"
    jwt_audience: str = "agent-run"
    session_token_lifetime: timedelta = timedelta(hours=1)
    worker_token_lifetime: timedelta = timedelta(hours=1)
    task_token_expiry_leeway: timedelta = timedelta(minutes=5)

    activation_token_lifetime: timedelta = timedelta(hours=24)
    # last_used is written at most this often per API key.
    api_key_last_used_interval: timedelta = timedelta(seconds=60)

    # The device flow, named as the reference's KITARU_SERVER_* settings: how long a device
    # authorization waits for approval, how often the device may poll, how many wrong
    # codes lock it, and how long an approved device (a trusted one) stays usable
    # (unset: until it is deleted or locked).
    server_device_auth_timeout_seconds: int = Field(default=300, ge=10, le=86400)
    server_device_auth_polling_interval_seconds: int = Field(default=5, ge=1, le=300)
    server_max_failed_device_auth_attempts: int = Field(default=3, ge=1, le=10)
    server_device_expiration_minutes: int | None = Field(default=None, ge=1)
    server_trusted_device_expiration_minutes: int | None = Field(default=None, ge=1)

    max_task_timeout: timedelta = timedelta(hours=24)
    max_blob_size_bytes: int = Field(default=100 * 1024 * 1024, ge=1)

    # Fernet keys (comma-separated; the first encrypts, all decrypt) that keep the answers
    # carrying a secret (API keys, tokens, activation tokens) encrypted in Redis so that an
    # Idempotency-Key retry replays them (the reference's KITARU_SERVER_SECRET_ENCRYPTION_KEY).
    # Unset: such answers are not kept, and a retry runs again.
    server_secret_encryption_key: SecretStr | None = None

    server_url: str = ""
    dashboard_url: str = ""

    @field_validator("jwt_signing_keys")
    @classmethod
    def _at_least_one_key(cls, value: SecretStr) -> SecretStr:
        if not [k for k in value.get_secret_value().split(",") if k.strip()]:
            raise ValueError("at least one signing key is required")
        return value

    @field_validator("server_secret_encryption_key")
    @classmethod
    def _fernet_keys(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            keys = [k.strip() for k in value.get_secret_value().split(",") if k.strip()]
            if not keys:
                raise ValueError("give at least one Fernet key, or leave it unset")
            for position, key in enumerate(keys, 1):
                try:
                    Fernet(key)
                except ValueError:
                    raise ValueError(f"key #{position} is not a Fernet key") from None
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Earlier sources win: SERVICE_* before KITARU_SERVER_*.
        return (
            init_settings,
            env_settings,
            KitaruEnvironment(settings_cls),
            dotenv_settings,
            file_secret_settings,
        )

    def secret_cipher(self) -> MultiFernet | None:
        """The cipher of secret-carrying idempotent answers, when keys are configured."""
        if self.server_secret_encryption_key is None:
            return None
        text = self.server_secret_encryption_key.get_secret_value()
        return MultiFernet([Fernet(k.strip()) for k in text.split(",") if k.strip()])
