"""Stack component and flavor request and response models in the reference's shapes."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared.envelope import NamedEnvelope
from shared.users import NestedUser
from tracking.component.flavors import StackComponentType
from tracking.component.secrets import masked_configuration
from tracking.core.schemas import UserScopedBody
from tracking.flavor.custom import AnyFlavor
from tracking.models import ServiceConnector, StackComponent
from tracking.secret.schemas import secret_reference
from tracking.service_connector.schemas import ServiceConnectorResponse, nested_connector

SecretRef = uuid.UUID | str
"""A secret named by id or by name."""

_BANNED_IN_NAMES = "\t\n\r\v\f"


def valid_name(value: str | None) -> str | None:
    """The reference's rule for stack and component names: no tabs or line breaks."""
    if value is not None and (not value.strip() or any(c in value for c in _BANNED_IN_NAMES)):
        raise ValueError("the name must be non-empty and contain no tabs or line breaks")
    return value


class UserScopeQuery(BaseModel):
    """``scope_user``: only what this user created, ANDed on whatever the other filters."""

    scope_user: uuid.UUID | None = Field(
        default=None, description="The user to scope this query to."
    )


class ComponentScopeQuery(UserScopeQuery):
    scope_type: str | None = Field(default=None, description="The type to scope this query to.")


class ComponentRequest(BaseModel):
    """``user`` is accepted and ignored: the creator is the caller."""

    model_config = ConfigDict(extra="ignore")

    user: uuid.UUID | None = None
    name: str = Field(min_length=1, max_length=255)
    type: StackComponentType
    flavor: str = Field(max_length=255)
    environment: dict[str, str] | None = None
    secrets: list[SecretRef] | None = None
    configuration: dict[str, Any]
    connector_resource_id: str | None = None
    labels: dict[str, Any] | None = None
    connector: uuid.UUID | None = None

    _name = field_validator("name")(valid_name)

    @field_validator("name")
    @classmethod
    def _not_a_reference(cls, name: str) -> str:
        if secret_reference(name) is not None:
            # The reference's wording.
            raise ValueError(
                "Passing the `name` attribute of a stack component as a secret reference is "
                "not allowed."
            )
        return name


class ComponentUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, min_length=1, max_length=255)
    configuration: dict[str, Any] | None = None
    environment: dict[str, str] | None = None
    connector_resource_id: str | None = None
    labels: dict[str, Any] | None = None
    connector: uuid.UUID | None = None
    add_secrets: list[SecretRef] | None = None
    remove_secrets: list[SecretRef] | None = None

    _name = field_validator("name")(valid_name)


class FlavorResponseBody(UserScopedBody):
    type: StackComponentType
    display_name: str
    integration: str | None
    source: str
    logo_url: str | None = None
    is_custom: bool = True


class FlavorResponseMetadata(BaseModel):
    config_schema: dict[str, Any]
    connector_type: str | None = None
    connector_resource_type: str | None = None
    connector_resource_id_attr: str | None = None
    docs_url: str | None = None
    sdk_docs_url: str | None = None


class UserScopedResources(BaseModel):
    """``resources`` of a user-scoped entity: its creator (null when unknown)."""

    model_config = ConfigDict(extra="allow")

    user: NestedUser | None = None


class FlavorResponseResources(UserScopedResources):
    pass


class FlavorResponse(
    NamedEnvelope[FlavorResponseBody, FlavorResponseMetadata, FlavorResponseResources]
):
    pass


class ComponentResponseBody(UserScopedBody):
    type: StackComponentType
    flavor_name: str
    integration: str | None = None
    logo_url: str | None = None


class ComponentResponseMetadata(BaseModel):
    configuration: dict[str, Any]
    environment: dict[str, str] = Field(default_factory=dict)
    secrets: list[uuid.UUID] = Field(default_factory=list)
    labels: dict[str, Any] | None = None
    connector_resource_id: str | None = None
    connector: ServiceConnectorResponse | None = None


class ComponentResponseResources(UserScopedResources):
    flavor: FlavorResponse


class ComponentResponse(
    NamedEnvelope[ComponentResponseBody, ComponentResponseMetadata, ComponentResponseResources]
):
    pass


def nested_flavor(flavor: AnyFlavor) -> FlavorResponse:
    """A flavor as nested in a component: body only."""
    return FlavorResponse(
        id=flavor.id,
        name=flavor.name,
        body=FlavorResponseBody(
            created=flavor.created,
            updated=flavor.updated,
            user_id=flavor.user_id,
            type=flavor.component_type,
            display_name=flavor.display_name,
            integration=flavor.integration,
            source=flavor.source,
            logo_url=flavor.logo_url,
            is_custom=flavor.is_custom,
        ),
    )


def _body(component: StackComponent, flavor: AnyFlavor) -> ComponentResponseBody:
    return ComponentResponseBody(
        created=component.created,
        updated=component.updated,
        user_id=component.user_id,
        type=StackComponentType(component.type),
        flavor_name=component.flavor,
        integration=flavor.integration,
        logo_url=flavor.logo_url,
    )


def nested_component(component: StackComponent, flavor: AnyFlavor) -> ComponentResponse:
    """A component as nested in a stack: body only."""
    return ComponentResponse(id=component.id, name=component.name, body=_body(component, flavor))


@dataclass(frozen=True)
class LinkedComponent:
    """A component, its flavor, the service connector it is linked to (if any) and its linked
    secrets as its viewer sees them (another user's private secret left out), to render."""

    component: StackComponent
    flavor: AnyFlavor
    connector: ServiceConnector | None = None
    secrets: list[uuid.UUID] = field(default_factory=list)

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.component.user_id


def component_response(
    item: LinkedComponent, hydrate: bool, user: NestedUser | None
) -> ComponentResponse:
    component, flavor = item.component, item.flavor
    metadata = None
    if hydrate:
        metadata = ComponentResponseMetadata(
            configuration=masked_configuration(component),
            environment=component.environment,
            secrets=item.secrets,
            labels=component.labels,
            connector_resource_id=component.connector_resource_id,
            connector=nested_connector(item.connector) if item.connector else None,
        )
    return ComponentResponse(
        id=component.id,
        name=component.name,
        body=_body(component, flavor),
        metadata=metadata,
        resources=ComponentResponseResources(
            user=user,
            flavor=nested_flavor(flavor),
        ),
    )
