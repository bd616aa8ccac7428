"""Settings base shared by every service.

Each service subclasses :class:`ServiceSettings`, adds its own fields and is built once
(``Settings()``) and passed into ``create_app``. Nothing else in the code base reads
``os.environ``.
"""

from __future__ import annotations

import ipaddress
import uuid
from datetime import timedelta
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["PLATFORM_VERSION", "ServiceSettings"]

# A fixed default so that every service of one local stack agrees on the cookie name
# without configuration; deployments set SERVER_ID explicitly.
DEFAULT_SERVER_ID = uuid.UUID("6b0a4c1e-3f55-4d8e-9a57-2f5c0d1b7e01")

PLATFORM_VERSION = "0.96.3"


class ServiceSettings(BaseSettings):
    """Fields every service has. Environment names are the field names in upper case."""

    model_config = SettingsConfigDict(
        env_file=None,
        extra="ignore",
        case_sensitive=False,
        validate_default=True,
    )

    service_name: str = "service"
    environment: Literal["development", "test", "production"] = "development"

    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/service"
    database_pool_size: int = Field(default=10, ge=1, le=200)
    database_echo: bool = False
    run_migrations: bool = True

    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_namespace: str = "platform"

    # Identity is the platform's only token issuer; every other service fetches its keys.
    server_id: uuid.UUID = DEFAULT_SERVER_ID
    jwt_issuer: str = "platform-identity"
    jwt_audience: str = "platform-api"
    jwks_url: str = "http://127.0.0.1:8101/.well-known/jwks.json"
    jwks_cache_ttl: timedelta = timedelta(minutes=10)
    # An unknown kid refetches the JWKS at most this often (random kids cannot flood identity).
    jwks_min_refresh_interval: timedelta = timedelta(seconds=5)
    jwt_leeway: timedelta = timedelta(seconds=30)

    # Credentials this service presents to identity (client-credentials grant) when it
    # calls another service.
    identity_url: str = "http://127.0.0.1:8101"
    service_client_id: str | None = None
    service_client_secret: SecretStr | None = None

    # Tracking owns the pipeline runs, schedules and deployments that workload tokens are
    # bound to; every service asks it (with its service token) whether a workload token's
    # object still accepts it, and trusts the answer this long. A run finished past its
    # leeway, a schedule deactivated or a deleted object stops its tokens everywhere
    # within this time.
    tracking_url: str = "http://127.0.0.1:8102"
    workload_scope_cache_ttl: timedelta = timedelta(seconds=5)

    # ZENKEY_ bearers (API keys in place of a token) are exchanged at identity, once per
    # process and key. A refused key is not asked about again for this long; a client
    # address may start this many exchanges a minute per process (in bursts of as many),
    # and none while identity throttles it: random keys from one address stop reaching
    # identity.
    api_key_refusal_memory: timedelta = timedelta(seconds=10)
    api_key_exchanges_per_minute: int = Field(default=30, ge=1)

    http_timeout: timedelta = timedelta(seconds=10)
    http_connect_timeout: timedelta = timedelta(seconds=3)
    http_retries: int = Field(default=2, ge=0, le=10)

    max_body_size: int = Field(default=10 * 1024 * 1024, ge=1024)
    # Peers whose X-Forwarded-For/-Proto are believed: the gateway's addresses (or the
    # network only it reaches the service from), comma-separated addresses and CIDR
    # networks. Only the gateway may name the client address that login throttling,
    # logs and metrics see; empty (the default) believes nobody, so every request's
    # client is its TCP peer. The local stack, compose and Kubernetes set it
    # (docs/deployment.md).
    forwarded_allow_ips: str = ""
    # This process's Prometheus metrics at http://metrics_host:metrics_port/metrics
    # (0: not served). Never routed by the gateway.
    metrics_port: int = Field(default=0, ge=0, le=65535)
    metrics_host: str = "127.0.0.1"
    log_level: str = "INFO"
    log_json: bool = True

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, value: str) -> str:
        """A PostgreSQL URL, with asyncpg as its driver (plain ``postgresql://`` and
        ``postgres://`` get it); any other database is refused."""
        scheme, separator, rest = value.partition("://")
        if not separator:
            raise ValueError(f"not a database URL: {value!r}")
        if scheme in ("postgresql", "postgres", "postgresql+asyncpg"):
            return f"postgresql+asyncpg://{rest}"
        raise ValueError(
            f"{scheme}:// is not supported: the platform runs on PostgreSQL only"
            " (postgresql://user@host:port/database)"
        )

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _proxy_addresses(cls, value: str) -> str:
        """Addresses and networks only: uvicorn would take anything else (a host name, a
        typo) for a literal that never matches, and ``*`` would let every peer name its
        own address."""
        entries = [entry.strip() for entry in value.split(",") if entry.strip()]
        for entry in entries:
            try:
                ipaddress.ip_network(entry)
            except ValueError:
                raise ValueError(
                    f"{entry!r} is neither an IP address nor a network such as 10.244.0.0/16:"
                    " list the gateway's addresses (or the network only it reaches the"
                    " services from)"
                ) from None
        return ",".join(entries)

    @property
    def session_cookie_name(self) -> str:
        """The reference's login cookie: ``zenml-server-<server id>``."""
        return f"zenml-server-{self.server_id}"
