"""Service connector request and response models in the reference's shapes."""

from __future__ import annotations

import json
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shared.envelope import NamedEnvelope
from shared.types import WireDatetime
from shared.users import NestedUser
from tracking.core.schemas import UserScopedBody

ConnectorType = str | dict[str, Any]
"""A type's id, or (as the reference sends and answers for the types it carries) the whole
type."""


def type_id(connector_type: ConnectorType) -> str:
    if isinstance(connector_type, str):
        return connector_type
    return str(connector_type.get("connector_type", ""))


class ServiceConnectorRequest(BaseModel):
    """``user`` is accepted and ignored: the creator is the caller."""

    model_config = ConfigDict(extra="ignore")

    user: uuid.UUID | None = None
    name: str = Field(max_length=255)
    connector_type: ConnectorType
    description: str = ""
    auth_method: str = Field(max_length=255)
    resource_types: list[str] = Field(default_factory=list)
    resource_id: str | None = Field(default=None, max_length=255)
    supports_instances: bool = False
    expires_at: WireDatetime | None = None
    expires_skew_tolerance: int | None = None
    expiration_seconds: int | None = None
    configuration: dict[str, Any] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)


class ServiceConnectorUpdate(BaseModel):
    """As on the reference, ``resource_id`` and ``expiration_seconds`` are replaced even
    when left out (cleared); ``configuration`` and ``labels``, when given, replace the
    stored ones whole."""

    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, max_length=255)
    connector_type: ConnectorType | None = None
    description: str | None = None
    auth_method: str | None = Field(default=None, max_length=255)
    resource_types: list[str] | None = None
    resource_id: str | None = Field(default=None, max_length=255)
    supports_instances: bool | None = None
    expires_at: WireDatetime | None = None
    expires_skew_tolerance: int | None = None
    expiration_seconds: int | None = None
    configuration: dict[str, Any] | None = None
    labels: dict[str, str] | None = None


class ServiceConnectorInfo(BaseModel):
    """A connector not yet registered, for ``full_stack_resources``."""

    type: str
    auth_method: str
    configuration: dict[str, Any] = Field(default_factory=dict)


class ServiceConnectorListQuery(BaseModel):
    """The reference's filters that are not plain columns: ``resource_type`` (one of
    the connector's), ``resource_id``, ``labels_str`` (JSON object, or ``a=1,b=``: a
    label without a value matches any value), ``scope_user`` (the creator);
    ``expand_secrets`` (default true) puts the
    secret fields into each connector's configuration."""

    resource_type: str | None = None
    resource_id: str | None = None
    labels_str: str | None = None
    scope_user: uuid.UUID | None = Field(default=None, description="Only this user's.")
    expand_secrets: bool = True

    def labels(self) -> dict[str, str | None] | None:
        if self.labels_str is None:
            return None
        try:
            parsed = json.loads(self.labels_str)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            return {str(k): None if v is None else str(v) for k, v in parsed.items()}
        pairs = (label.split("=", 1) for label in self.labels_str.split(","))
        return {p[0]: (p[1] or None) if len(p) == 2 else None for p in pairs}


class ServiceConnectorGetQuery(BaseModel):
    hydrate: bool = True
    expand_secrets: bool = True


class VerifyConfigQuery(BaseModel):
    list_resources: bool = True


class ClientQuery(BaseModel):
    resource_type: str | None = None
    resource_id: str | None = None


class VerifyQuery(ClientQuery):
    list_resources: bool = True


class FullStackQuery(BaseModel):
    connector_uuid: uuid.UUID | None = None


class TypesQuery(BaseModel):
    connector_type: str | None = None
    resource_type: str | None = None
    auth_method: str | None = None


class ServiceConnectorResponseBody(UserScopedBody):
    description: str = ""
    connector_type: ConnectorType
    auth_method: str
    resource_types: list[str] = Field(default_factory=list)
    resource_id: str | None = None
    supports_instances: bool = False
    expires_at: WireDatetime | None = None
    expires_skew_tolerance: int | None = None


class ServiceConnectorResponseMetadata(BaseModel):
    configuration: dict[str, Any] = Field(default_factory=dict)
    expiration_seconds: int | None = None
    labels: dict[str, str] = Field(default_factory=dict)


class ServiceConnectorResponseResources(BaseModel):
    model_config = ConfigDict(extra="allow")

    user: NestedUser | None = None


class ServiceConnectorResponse(
    NamedEnvelope[
        ServiceConnectorResponseBody,
        ServiceConnectorResponseMetadata,
        ServiceConnectorResponseResources,
    ]
):
    pass


class TypedResources(BaseModel):
    resource_type: str
    resource_ids: list[str] | None = None
    error: str | None = None


class ServiceConnectorResourcesModel(BaseModel):
    """What a connector reaches, per resource type, or why it reaches nothing."""

    id: uuid.UUID | None = None
    name: str | None = None
    connector_type: ConnectorType
    resources: list[TypedResources] = Field(default_factory=list)
    error: str | None = None


class ServiceConnectorResourcesInfo(BaseModel):
    connector_type: str
    components_resources_info: dict[str, list[dict[str, Any]]]


def connector_response(
    row: Any,
    spec: dict[str, Any] | None,
    user: NestedUser | None,
    *,
    hydrate: bool,
    secrets: dict[str, str] | None = None,
) -> ServiceConnectorResponse:
    """One connector: its type as the whole type where the server lists it (as the
    reference populates it), ``secrets`` merged into its configuration when given."""
    metadata = None
    if hydrate:
        metadata = ServiceConnectorResponseMetadata(
            configuration={**row.configuration, **(secrets or {})},
            expiration_seconds=row.expiration_seconds,
            labels=row.labels or {},
        )
    return ServiceConnectorResponse(
        id=row.id,
        name=row.name,
        body=ServiceConnectorResponseBody(
            created=row.created,
            updated=row.updated,
            user_id=row.user_id,
            description=row.description,
            connector_type=spec if spec is not None else row.connector_type,
            auth_method=row.auth_method,
            resource_types=row.resource_types,
            resource_id=row.resource_id,
            supports_instances=row.supports_instances,
            expires_at=row.expires_at,
            expires_skew_tolerance=row.expires_skew_tolerance,
        ),
        metadata=metadata,
        resources=ServiceConnectorResponseResources(user=user),
    )


def nested_connector(row: Any) -> ServiceConnectorResponse:
    """A connector as nested in a stack component: its body only, its type by id (as the
    reference nests it)."""
    response = connector_response(row, None, None, hydrate=False)
    return response.model_copy(update={"resources": None})
