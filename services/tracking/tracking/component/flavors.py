"""The stack component flavors this server knows: a small static registry.

The reference keeps flavors in its database, synced from the zenml package at start-up; we
serve the few built-in ones our components may use. Each flavor's ``source`` names the
zenml class the client imports to run it, so the client finds the real implementation;
``config_schema`` is the JSON schema of the configuration *we* accept (stricter than the
client's own class: a local artifact store needs an absolute path here, because this server
reads the artifacts it stores).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePosixPath
from typing import Any, ClassVar
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from shared.errors import BadRequest, NotFound
from tracking.secret.schemas import secret_reference


class StackComponentType(StrEnum):
    ALERTER = "alerter"
    ANNOTATOR = "annotator"
    ARTIFACT_STORE = "artifact_store"
    CONTAINER_REGISTRY = "container_registry"
    DATA_VALIDATOR = "data_validator"
    EXPERIMENT_TRACKER = "experiment_tracker"
    FEATURE_STORE = "feature_store"
    IMAGE_BUILDER = "image_builder"
    LOG_STORE = "log_store"
    MODEL_DEPLOYER = "model_deployer"
    ORCHESTRATOR = "orchestrator"
    STEP_OPERATOR = "step_operator"
    MODEL_REGISTRY = "model_registry"
    DEPLOYER = "deployer"
    SANDBOX = "sandbox"


MULTIPLE_PER_STACK = frozenset(
    {
        StackComponentType.ALERTER,
        StackComponentType.EXPERIMENT_TRACKER,
        StackComponentType.STEP_OPERATOR,
        StackComponentType.SANDBOX,
    }
)
"""The component types a stack may hold more than one of (the reference's rule)."""

# Flavor ids are derived from (type, name), so they are the same on every replica and
# across restarts without a table.
_FLAVOR_NAMESPACE = uuid.UUID("0c6f2f43-8a57-4b8e-b1e6-4a0d5d8f6c21")
# The registry is code: its rows were "created" with this release of it.
_REGISTERED = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
_LOGOS = "https://public-flavor-logos.s3.eu-central-1.amazonaws.com"
_SDK_DOCS = "https://sdkdocs.zenml.io/0.96.3/core_code_docs"


class LocalArtifactStoreConfig(BaseModel):
    """A directory on this server's filesystem."""

    model_config = ConfigDict(extra="forbid", title="LocalArtifactStoreConfig")

    path: str = Field(
        min_length=1,
        description="Absolute path of the directory that holds the artifacts.",
    )

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if "\x00" in value or not PurePosixPath(value).is_absolute():
            raise ValueError(f"The local artifact store path '{value}' is not an absolute path.")
        return value


SENSITIVE = "sensitive"
"""The JSON-schema mark of a secret field (the reference's ``SecretField`` sets the same)."""


def SecretField(description: str) -> Any:
    """A configuration field whose value is a secret: stored encrypted, answered masked."""
    return Field(default=None, description=description, json_schema_extra={SENSITIVE: True})


def _json_object(value: Any) -> Any:
    """The reference's CLI passes these dicts as JSON text; both spellings are accepted."""
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError(f"Invalid json string '{value}'") from None
        if not isinstance(decoded, dict):
            raise ValueError(f"Json string '{value}' did not decode into a dictionary.")
        return decoded
    return value


_URL_SCHEME = re.compile(r"^([a-z0-9]+://)")
# Credentials go in the secret fields, which are encrypted; boto's own spelling of them in
# ``client_kwargs`` would be stored and answered in clear.
_CREDENTIALS_IN_CLIENT_KWARGS = ("aws_access_key_id", "aws_secret_access_key", "aws_session_token")


def s3_endpoint(url: Any) -> str:
    """An s3 store's ``endpoint_url`` without its trailing ``/``, when it is only
    ``http[s]://host[:port][/path]``: a query, a fragment or user info would let the
    caller bend the object URLs the server builds on it (``http://host/x?`` turns the
    bucket and key into a query string). ``ValueError`` otherwise."""
    scheme = _URL_SCHEME.search(url) if isinstance(url, str) else None
    if scheme is None or scheme.group() not in ("https://", "http://"):
        raise ValueError(
            f"Invalid URL for endpoint url: {url}. Should be in the form "
            "https://hostname[:port] or http://hostname[:port]."
        )
    parts = urlsplit(url)
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        port_ok = False
    if (
        not parts.hostname
        or not port_ok
        or "?" in url
        or "#" in url
        or "@" in parts.netloc
        or any(c.isspace() or ord(c) < 32 or c == "\\" for c in url)
    ):
        raise ValueError(
            f"Invalid URL for endpoint url: {url}. Should be in the form "
            "https://hostname[:port][/path], without user info, query or fragment."
        )
    return str(url).rstrip("/")


class S3ArtifactStoreConfig(BaseModel):
    """An S3 bucket (or a prefix in one), on AWS or any S3-compatible server."""

    model_config = ConfigDict(extra="forbid", title="S3ArtifactStoreConfig")

    path: str = Field(
        description="Root of the store: s3://bucket or s3://bucket/prefix.",
    )
    key: str | None = SecretField("AWS access key ID (unset: the server's environment).")
    secret: str | None = SecretField("AWS secret access key.")
    token: str | None = SecretField("AWS session token, for temporary credentials.")
    authentication_secret: str | None = Field(
        default=None,
        description="Name of a ZenML secret with the credentials (refused by this server).",
    )
    client_kwargs: dict[str, Any] | None = Field(
        default=None,
        description="S3 client arguments, e.g. {'endpoint_url': 'http://minio:9000', "
        "'region_name': 'eu-west-1'}.",
    )
    config_kwargs: dict[str, Any] | None = Field(
        default=None,
        description="S3 client configuration, e.g. {'region_name': 'us-west-2', "
        "'s3': {'addressing_style': 'virtual'}}.",
    )
    s3_additional_kwargs: dict[str, Any] | None = Field(
        default=None,
        description="Arguments of S3 operations, e.g. {'ACL': 'bucket-owner-full-control'}.",
    )

    @model_validator(mode="before")
    @classmethod
    def _supported_scheme(cls, data: Any) -> Any:
        # The reference strips quotes a shell left around the path, then checks its scheme.
        if isinstance(data, dict) and isinstance(data.get("path"), str):
            path = data["path"].strip("'\"`")
            if not path.startswith("s3://"):
                raise ValueError(
                    f"The path: '{path}' you defined for your artifact store is not supported "
                    "by the implementation of S3ArtifactStoreConfig, because it does not start "
                    "with one of its supported schemes: {'s3://'}."
                )
            data = {**data, "path": path}
        return data

    @field_validator("path")
    @classmethod
    def _bucket(cls, value: str) -> str:
        bucket, _, prefix = value.removeprefix("s3://").partition("/")
        segments = [s for s in prefix.split("/") if s]
        if not bucket or "\x00" in value or any(s in (".", "..") for s in segments):
            raise ValueError(f"'{value}' is not an S3 path of the form s3://bucket[/prefix].")
        return value

    @field_validator("client_kwargs", "config_kwargs", "s3_additional_kwargs", mode="before")
    @classmethod
    def _decoded(cls, value: Any) -> Any:
        return _json_object(value)

    @field_validator("client_kwargs")
    @classmethod
    def _client_kwargs(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return value
        url = value.get("endpoint_url")
        if url:
            s3_endpoint(url)
        given = [k for k in _CREDENTIALS_IN_CLIENT_KWARGS if k in value]
        if given:
            raise ValueError(
                f"{', '.join(given)} may not be given in client_kwargs: give the credentials "
                "as key, secret and token, which this server stores encrypted."
            )
        return value

    @field_validator("authentication_secret")
    @classmethod
    def _no_secret_store(cls, value: str | None) -> str | None:
        if value is not None:
            raise ValueError(
                "this server does not resolve an authentication secret for the reads it "
                "makes from a store: give key, secret and token instead (they are stored "
                "encrypted)."
            )
        return value


class LocalOrchestratorConfig(BaseModel):
    """Runs pipelines in the client's own process; nothing to configure."""

    model_config = ConfigDict(extra="forbid", title="LocalOrchestratorConfig")


class LocalDeployerConfig(BaseModel):
    """Serves deployments as local processes, started by the client."""

    model_config = ConfigDict(extra="forbid", title="LocalDeployerConfig")

    port: int | None = Field(default=None, ge=1, le=65535)
    allocate_port_if_busy: bool = True
    port_range: tuple[int, int] = (8000, 65535)
    address: str = "127.0.0.1"
    blocking: bool = False
    auto_reload: bool = False


@dataclass(frozen=True)
class Flavor:
    component_type: StackComponentType
    name: str
    config: type[BaseModel]
    source: str
    logo_url: str
    docs_url: str
    sdk_docs_url: str
    integration: str = "built-in"
    local: bool = False
    """Relies on the client's machine (its filesystem or processes), as the reference's
    config ``is_local``: a stack with such a component cannot back a run template."""
    is_custom: ClassVar[bool] = False
    connector_type: ClassVar[str | None] = None
    connector_resource_type: ClassVar[str | None] = None
    connector_resource_id_attr: ClassVar[str | None] = None

    @property
    def id(self) -> uuid.UUID:
        return uuid.uuid5(_FLAVOR_NAMESPACE, f"{self.component_type}/{self.name}")

    @property
    def display_name(self) -> str:
        return self.name.replace("_", " ").title()

    @property
    def created(self) -> dt.datetime:
        return _REGISTERED

    @property
    def updated(self) -> dt.datetime:
        return _REGISTERED

    @property
    def user_id(self) -> uuid.UUID | None:
        """Built in: no user made it."""
        return None

    def config_schema(self) -> dict[str, Any]:
        return self.config.model_json_schema()

    @property
    def secret_fields(self) -> frozenset[str]:
        """The configuration fields that hold secrets (see :func:`SecretField`)."""
        return frozenset(
            name
            for name, field in self.config.model_fields.items()
            if isinstance(field.json_schema_extra, dict) and field.json_schema_extra.get(SENSITIVE)
        )

    @property
    def validated_fields(self) -> frozenset[str]:
        """The configuration fields a validator of their own checks."""
        validators = self.config.__pydantic_decorators__.field_validators.values()
        return frozenset(field for v in validators for field in v.info.fields)

    def validate_config(self, configuration: dict[str, Any]) -> dict[str, Any]:
        """The configuration as stored (400 ``ValueError`` when it does not fit)."""
        unknown = sorted(set(configuration) - set(self.config.model_fields))
        if unknown:
            # The reference's wording.
            raise BadRequest(
                f"Invalid configuration keys {unknown} for {self.name} {self.component_type}."
            )
        for field, value in configuration.items():
            if field in self.validated_fields and secret_reference(value) is not None:
                # The reference's client refuses these (its wording); a reference in any
                # other field is kept as given, for whoever reads the field to resolve.
                raise BadRequest(
                    f"Passing the attribute `{field}` as a secret reference is not allowed as "
                    "additional validation is required for this attribute."
                )
        try:
            return self.config.model_validate(configuration).model_dump(exclude_unset=True)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'configuration'}: {e['msg']}"
                for e in exc.errors(include_url=False)
            )
            raise BadRequest(
                f"Invalid configuration for the {self.name} {self.component_type}: {problems}"
            ) from None


FLAVORS: tuple[Flavor, ...] = (
    Flavor(
        component_type=StackComponentType.ARTIFACT_STORE,
        name="local",
        config=LocalArtifactStoreConfig,
        source="zenml.artifact_stores.local_artifact_store.LocalArtifactStoreFlavor",
        local=True,
        logo_url=f"{_LOGOS}/artifact_store/local.svg",
        docs_url="https://docs.zenml.io/stack-components/artifact-stores/local",
        sdk_docs_url=f"{_SDK_DOCS}/core-artifact_stores/#zenml.artifact_stores.local_artifact_store",
    ),
    Flavor(
        component_type=StackComponentType.ARTIFACT_STORE,
        name="s3",
        config=S3ArtifactStoreConfig,
        source="zenml.integrations.s3.flavors.s3_artifact_store_flavor.S3ArtifactStoreFlavor",
        logo_url=f"{_LOGOS}/artifact_store/aws.png",
        docs_url="https://docs.zenml.io/stack-components/artifact-stores/s3",
        sdk_docs_url=(
            "https://sdkdocs.zenml.io/0.96.3/integration_code_docs/integrations-s3"
            "#zenml.integrations.s3.flavors.S3ArtifactStoreConfig"
        ),
        integration="s3",
    ),
    Flavor(
        component_type=StackComponentType.ORCHESTRATOR,
        name="local",
        config=LocalOrchestratorConfig,
        source="zenml.orchestrators.local.local_orchestrator.LocalOrchestratorFlavor",
        local=True,
        logo_url=f"{_LOGOS}/orchestrator/local.png",
        docs_url="https://docs.zenml.io/stack-components/orchestrators/local",
        sdk_docs_url=f"{_SDK_DOCS}/core-orchestrators/#zenml.orchestrators.local.local_orchestrator",
    ),
    Flavor(
        component_type=StackComponentType.DEPLOYER,
        name="local",
        config=LocalDeployerConfig,
        source="zenml.deployers.local.local_deployer.LocalDeployerFlavor",
        local=True,
        logo_url=f"{_LOGOS}/deployer/local.svg",
        docs_url="https://docs.zenml.io/stack-components/deployers/local",
        sdk_docs_url=f"{_SDK_DOCS}/core-deployers/#zenml.deployers.local.local_deployer",
    ),
)

BUILT_IN: dict[tuple[str, str], Flavor] = {(f.component_type.value, f.name): f for f in FLAVORS}
"""The built-in flavors by their component type and name."""


class FlavorNotFound(NotFound):
    def __init__(self, name: str, component_type: str) -> None:
        super().__init__(f"No flavor with name '{name}' and type '{component_type}' exists.")


def flavor_for(component_type: str, name: str) -> Flavor:
    """The built-in flavor (404 ``KeyError`` when unknown, as the reference); a component
    of any flavor is looked up with :func:`tracking.flavor.custom.find_flavor`."""
    flavor = BUILT_IN.get((StackComponentType(component_type).value, name))
    if flavor is None:
        raise FlavorNotFound(name, component_type)
    return flavor
