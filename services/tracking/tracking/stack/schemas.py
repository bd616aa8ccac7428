"""Stack request and response models in the reference's shapes."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared.envelope import NamedEnvelope
from shared.users import NestedUser
from tracking.component.flavors import MULTIPLE_PER_STACK, StackComponentType
from tracking.component.schemas import (
    ComponentResponse,
    SecretRef,
    UserScopedResources,
    nested_component,
    valid_name,
)
from tracking.core.schemas import UserScopedBody
from tracking.flavor.custom import AnyFlavor, FlavorKey, flavor_of
from tracking.models import Stack, StackComponent

Composition = dict[StackComponentType, list[uuid.UUID]]
"""Component ids by type. Only ids of existing components: creating components inline
(the reference's ``ComponentInfo``) is not supported."""


REQUIRED_TYPES = (StackComponentType.ORCHESTRATOR, StackComponentType.ARTIFACT_STORE)


def valid_composition(value: Composition | None) -> Composition | None:
    """The reference's rules: one component per type except the repeatable types, and at
    least an orchestrator and an artifact store."""
    if value is None:
        return None
    for component_type, ids in value.items():
        if component_type not in MULTIPLE_PER_STACK and len(ids) > 1:
            raise ValueError(
                f"Stack component type '{component_type}' does not support multiple "
                "components in a single stack."
            )
    if not all(value.get(t) for t in REQUIRED_TYPES):
        raise ValueError("Stack must contain at least an orchestrator and artifact store.")
    return value


def _composition_schema(schema: dict[str, Any]) -> None:
    """:func:`valid_composition`'s rules, in the OpenAPI document."""
    schema["required"] = [t.value for t in REQUIRED_TYPES]
    schema["properties"] = {
        t.value: {
            "type": "array",
            "items": {"type": "string", "format": "uuid"},
            **({"minItems": 1} if t in REQUIRED_TYPES else {}),
            **({} if t in MULTIPLE_PER_STACK else {"maxItems": 1}),
        }
        for t in StackComponentType
    }


class StackRequest(BaseModel):
    """``user`` is accepted and ignored: the creator is the caller."""

    model_config = ConfigDict(extra="ignore")

    user: uuid.UUID | None = None
    name: str = Field(max_length=255)
    description: str = Field(default="", max_length=255)
    stack_spec_path: str | None = None
    components: Composition = Field(json_schema_extra=_composition_schema)
    environment: dict[str, str] | None = None
    secrets: list[SecretRef] | None = None
    labels: dict[str, Any] | None = None
    service_connectors: list[uuid.UUID | dict[str, Any]] = Field(default_factory=list)

    _name = field_validator("name")(valid_name)
    _components = field_validator("components")(valid_composition)


class StackUpdate(BaseModel):
    """Every field optional; ``null`` leaves a field as it is; ``components`` replaces
    the whole composition."""

    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, max_length=255)
    description: str | None = Field(default=None, max_length=255)
    stack_spec_path: str | None = None
    components: Composition | None = Field(default=None, json_schema_extra=_composition_schema)
    environment: dict[str, str] | None = None
    labels: dict[str, Any] | None = None
    add_secrets: list[SecretRef] | None = None
    remove_secrets: list[SecretRef] | None = None

    _name = field_validator("name")(valid_name)
    _components = field_validator("components")(valid_composition)


class StackResponseBody(UserScopedBody):
    pass


class StackResponseMetadata(BaseModel):
    components: dict[StackComponentType, list[ComponentResponse]]
    description: str | None = ""
    stack_spec_path: str | None = None
    environment: dict[str, str] = Field(default_factory=dict)
    secrets: list[uuid.UUID] = Field(default_factory=list)
    labels: dict[str, Any] | None = None


class StackResponseResources(UserScopedResources):
    pass


class StackResponse(
    NamedEnvelope[StackResponseBody, StackResponseMetadata, StackResponseResources]
):
    pass


def nested_stack(stack: Any) -> StackResponse:
    """Body only, as nested in deployments, snapshots and runs."""
    body = StackResponseBody(created=stack.created, updated=stack.updated, user_id=stack.user_id)
    return StackResponse(id=stack.id, name=stack.name, body=body)


def _by_type(
    components: Iterable[StackComponent], flavors: dict[FlavorKey, AnyFlavor]
) -> dict[StackComponentType, list[ComponentResponse]]:
    grouped: dict[StackComponentType, list[ComponentResponse]] = {}
    for component in components:
        grouped.setdefault(StackComponentType(component.type), []).append(
            nested_component(component, flavor_of(flavors, component))
        )
    # In the order the types are declared, so a stack always renders the same way.
    return {t: grouped[t] for t in StackComponentType if t in grouped}


@dataclass(frozen=True)
class ComposedStack:
    """A stack with its components and their flavors (loaded only when the stack is to be
    hydrated)."""

    stack: Stack
    components: list[StackComponent] | None = None
    secrets: list[uuid.UUID] = field(default_factory=list)
    flavors: dict[FlavorKey, AnyFlavor] = field(default_factory=dict)

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.stack.user_id


def stack_response(
    composed: ComposedStack, hydrate: bool, user: NestedUser | None
) -> StackResponse:
    stack, metadata = composed.stack, None
    if hydrate and composed.components is not None:
        metadata = StackResponseMetadata(
            components=_by_type(composed.components, composed.flavors),
            description=stack.description,
            stack_spec_path=stack.stack_spec_path,
            environment=stack.environment,
            secrets=composed.secrets,
            labels=stack.labels,
        )
    return StackResponse(
        id=stack.id,
        name=stack.name,
        body=StackResponseBody(created=stack.created, updated=stack.updated, user_id=stack.user_id),
        metadata=metadata,
        resources=StackResponseResources(user=user),
    )
