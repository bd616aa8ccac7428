"""The tracking service's settings."""

from __future__ import annotations

from datetime import timedelta
from ipaddress import IPv4Network, IPv6Network
from pathlib import Path

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from shared.secret_box import SecretBox
from shared.settings import ServiceSettings


class Settings(ServiceSettings):
    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False)

    service_name: str = "tracking"
    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/tracking"
    # Root of the default stack's local artifact store (created at first start).
    artifact_store_root: Path = Path(".local/artifacts")
    # Artifact data downloads: the largest artifact served (the reference's 2 GiB default)
    # and how long a download token lives.
    download_size_limit: int = Field(default=2 * 1024**3, ge=1)
    download_token_lifetime: timedelta = timedelta(seconds=30)
    # Signs download tokens, which only tracking reads. Replicas must share it; unset, each
    # process makes its own (fine for one process, as the local stack runs).
    download_token_secret: SecretStr | None = None
    # A workload token scoped to a pipeline run stays valid this long after the run
    # finished (so the steps still running when another failed can report); negative:
    # for ever. The reference's ZENML_WORKLOAD_TOKEN_EXPIRATION_LEEWAY, same default.
    workload_token_expiration_leeway: timedelta = timedelta(seconds=3600)
    # The largest visualization loaded into a response.
    visualization_size_limit: int = Field(default=100 * 1024**2, ge=1)
    # Services (client ids of identity's client-credentials grant) whose service tokens may
    # request snapshot runs (`POST /pipeline_snapshots/{id}/runs`): the webhooks service,
    # for its triggers. Users may too; workload tokens may not.
    snapshot_run_clients: list[str] = Field(default_factory=lambda: ["webhooks"])
    # Fernet keys (comma-separated) encrypting tracking's secrets at rest: the secret fields
    # of stack components (an s3 artifact store's key, secret and token) and the values of
    # secrets (/api/v1/secrets). The first encrypts; all decrypt, so a new key goes in
    # front and the old one is dropped once `python -m tracking.reencrypt` has rewritten
    # every secret under the new one. Required in production; unset elsewhere, components
    # with secret fields are refused and /secrets answers 501 (no secrets store).
    component_secret_keys: SecretStr | None = None
    # Reaching S3-compatible artifact stores: the connect phase, a whole request (a large
    # object streamed to a slow client takes long), and retries of failed requests.
    artifact_store_connect_timeout: timedelta = timedelta(seconds=5)
    artifact_store_request_timeout: timedelta = timedelta(hours=1)
    artifact_store_retries: int = Field(default=2, ge=0, le=10)
    # The directories whose files the server reads, streams and deletes for `local`
    # artifact stores (a store elsewhere is registered, but its files are refused). Unset:
    # `artifact_store_root` alone. Links are resolved before the check.
    local_artifact_store_roots: list[Path] | None = None
    # Addresses the server may reach for S3 stores although they are loopback, private,
    # link-local or otherwise not public (networks, e.g. `10.1.0.0/16` for an in-cluster
    # MinIO). A cloud metadata address must be listed on its own to be reached.
    artifact_store_allowed_networks: list[IPv4Network | IPv6Network] = Field(default_factory=list)

    @field_validator("download_token_secret")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        # HS256 wants at least 32 bytes of key.
        if value is not None and len(value.get_secret_value().encode()) < 32:
            raise ValueError("download_token_secret must be at least 32 bytes long")
        return value

    @field_validator("component_secret_keys")
    @classmethod
    def _valid_keys(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            SecretBox(value)  # raises ValueError on an empty list or a malformed key
        return value

    @model_validator(mode="after")
    def _keys_in_production(self) -> Settings:
        if self.environment == "production" and self.component_secret_keys is None:
            raise ValueError(
                "COMPONENT_SECRET_KEYS is required in production: stack components' secret "
                "fields and secrets' values are stored encrypted with it"
            )
        return self

    def local_store_roots(self) -> list[Path]:
        """The directories local artifact stores may read from."""
        if self.local_artifact_store_roots is None:
            return [self.artifact_store_root]
        return list(self.local_artifact_store_roots)

    def secret_box(self) -> SecretBox | None:
        """The box of components' secret fields and secrets' values (``None`` without
        keys)."""
        keys = self.component_secret_keys
        return SecretBox(keys) if keys is not None else None
