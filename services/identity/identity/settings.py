"""Identity's settings: the shared base plus token lifetimes, keys and clients."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from shared.passwords import PasswordHashSettings
from shared.settings import ServiceSettings
from shared.throttle import LoginThrottleSettings


class Settings(ServiceSettings, LoginThrottleSettings, PasswordHashSettings):
    # Passwords' argon2id cost: the `password_hash_*` fields of PasswordHashSettings
    # (shared.passwords), OWASP's by default; the tests lower it.
    # Login throttling: the `login_*` fields of LoginThrottleSettings (shared.throttle).
    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False)

    service_name: str = "identity"
    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/identity"

    # The first admin, `default`, is created at first start with this password, or with a
    # random one printed once when it is unset.
    default_admin_password: SecretStr | None = None
    default_admin_name: str = "default"

    # Fernet keys (comma-separated) encrypting the signing keys at rest. The first encrypts;
    # all decrypt, so a new key can be put in front and the old one dropped later.
    signing_key_encryption_keys: SecretStr
    signing_key_rotation_interval: timedelta = timedelta(days=30)
    # A rotated-in key is published this long before it signs, longer than the verifiers'
    # JWKS refetch limit (jwks_min_refresh_interval), so no service meets an unknown kid.
    signing_key_activation_delay: timedelta = timedelta(seconds=15)
    # How often each replica re-reads the keys (to sign with a rotated-in key).
    signing_key_refresh_interval: timedelta = timedelta(seconds=10)
    # How long a superseded key keeps verifying (longer than any token it signed lives).
    signing_key_retention: timedelta = timedelta(days=8)

    # Session tokens are short-lived (security reference: at most 1 h); the zenml client
    # logs in again on a 401 with the credentials it holds.
    access_token_lifetime: timedelta = timedelta(hours=1)
    service_token_lifetime: timedelta = timedelta(minutes=15)

    # OAuth device authorization (RFC 8628). A device code lives `device_auth_timeout`;
    # clients poll no faster than `device_auth_polling_interval` (each `slow_down` widens
    # that device's interval by 5 s). A redeemed device and its token live
    # `device_expiration`, or `trusted_device_expiration` when the user trusted it.
    device_auth_timeout: timedelta = timedelta(seconds=300)
    device_auth_polling_interval: timedelta = timedelta(seconds=5)
    device_expiration: timedelta = timedelta(days=1)
    trusted_device_expiration: timedelta = timedelta(days=30)
    max_failed_device_auth_attempts: int = Field(default=3, ge=1, le=5)

    # Generic API tokens (`GET /api/v1/api_token`): the default and the largest lifetime.
    generic_api_token_lifetime: timedelta = timedelta(hours=1)
    generic_api_token_max_lifetime: timedelta = timedelta(days=7)

    # client_id -> secret of the services allowed the client-credentials grant.
    service_clients: dict[str, SecretStr] = Field(default_factory=dict)

    # The server's name, announcements and update notices in the dashboard: the values a
    # new server starts with; an admin changes them later (PUT /api/v1/settings).
    server_name: str = "platform"
    display_announcements: bool = False
    display_updates: bool = False
    # Where clients reach the platform's API and the dashboard (the gateway's platform
    # entrypoint): /info tells them, the CLI links runs and devices there. The dashboard's
    # defaults to the server's, as the reference's does.
    server_url: str = ""
    dashboard_url: str = ""
    cookie_secure: bool = False

    @field_validator("signing_key_encryption_keys")
    @classmethod
    def _at_least_one_key(cls, value: SecretStr) -> SecretStr:
        if not [k for k in value.get_secret_value().split(",") if k.strip()]:
            raise ValueError("at least one Fernet key is required")
        return value

    @field_validator("server_url", "dashboard_url")
    @classmethod
    def _web_address(cls, value: str) -> str:
        # Clients append paths ("/devices/verify", "/projects/..."): no trailing slash.
        value = value.strip().rstrip("/")
        if value and urlsplit(value).scheme not in ("http", "https"):
            raise ValueError("must be an http or https URL")
        return value

    @model_validator(mode="after")
    def _dashboard_at_server(self) -> Settings:
        if not self.dashboard_url:
            self.dashboard_url = self.server_url
        return self

    def fernet_keys(self) -> list[bytes]:
        return [
            k.strip().encode()
            for k in self.signing_key_encryption_keys.get_secret_value().split(",")
            if k.strip()
        ]
