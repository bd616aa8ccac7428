"""Flavor requests and responses: the reference's envelope, the config schema when
hydrated, the creator in ``resources``."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shared.users import NestedUser
from tracking.component.flavors import StackComponentType
from tracking.component.schemas import (
    FlavorResponse,
    FlavorResponseMetadata,
    FlavorResponseResources,
    nested_flavor,
)
from tracking.flavor.custom import AnyFlavor

_STR = 255


class FlavorListQuery(BaseModel):
    """``scope_user``: only flavors this user made (the built-in ones have no user)."""

    scope_user: uuid.UUID | None = None


class FlavorRequest(BaseModel):
    """``user`` is accepted and ignored: the creator is the caller (none when the flavor
    is sent as not custom, as the reference)."""

    model_config = ConfigDict(extra="ignore")

    user: uuid.UUID | None = None
    name: str = Field(max_length=_STR)
    display_name: str | None = Field(default=None, max_length=_STR)
    type: StackComponentType
    config_schema: dict[str, Any]
    connector_type: str | None = Field(default=None, max_length=_STR)
    connector_resource_type: str | None = Field(default=None, max_length=_STR)
    connector_resource_id_attr: str | None = Field(default=None, max_length=_STR)
    source: str = Field(max_length=_STR)
    integration: str | None = Field(max_length=_STR)
    logo_url: str | None = None
    docs_url: str | None = None
    sdk_docs_url: str | None = None
    is_custom: bool = True


class FlavorUpdate(BaseModel):
    """Only the fields given change (``user`` is never changed)."""

    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, max_length=_STR)
    display_name: str | None = Field(default=None, max_length=_STR)
    type: StackComponentType | None = None
    config_schema: dict[str, Any] | None = None
    connector_type: str | None = Field(default=None, max_length=_STR)
    connector_resource_type: str | None = Field(default=None, max_length=_STR)
    connector_resource_id_attr: str | None = Field(default=None, max_length=_STR)
    source: str | None = Field(default=None, max_length=_STR)
    integration: str | None = Field(default=None, max_length=_STR)
    logo_url: str | None = None
    docs_url: str | None = None
    sdk_docs_url: str | None = None
    is_custom: bool | None = None


def flavor_response(flavor: AnyFlavor, hydrate: bool, user: NestedUser | None) -> FlavorResponse:
    """``resources`` is always there (the creator, null for a built-in flavor)."""
    update: dict[str, object] = {"resources": FlavorResponseResources(user=user)}
    if hydrate:
        update["metadata"] = FlavorResponseMetadata(
            config_schema=flavor.config_schema(),
            connector_type=flavor.connector_type,
            connector_resource_type=flavor.connector_resource_type,
            connector_resource_id_attr=flavor.connector_resource_id_attr,
            docs_url=flavor.docs_url,
            sdk_docs_url=flavor.sdk_docs_url,
        )
    return nested_flavor(flavor).model_copy(update=update)
