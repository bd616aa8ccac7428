"""Custom flavors (registered through the API, rows of ``custom_flavors``) next to the
built-in ones (code, :data:`~tracking.component.flavors.FLAVORS`), and finding either by
the (type, name) a component names.

A component of a custom flavor is stored with its configuration as given: as on the
reference, the client validates it against the flavor's ``config_schema`` (the server
has not the flavor's code); a built-in flavor's components are still checked here.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import tuple_
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from tracking.component.flavors import BUILT_IN, Flavor, FlavorNotFound, StackComponentType
from tracking.models import CustomFlavor

FlavorKey = tuple[str, str]
"""A flavor's component type and name: what a component names its flavor by."""


@dataclass(frozen=True)
class StoredFlavor:
    """A custom flavor as the components and the flavor answers use it."""

    id: uuid.UUID
    name: str
    component_type: StackComponentType
    display_name: str
    source: str
    schema: dict[str, Any]
    integration: str | None
    logo_url: str | None
    docs_url: str | None
    sdk_docs_url: str | None
    connector_type: str | None
    connector_resource_type: str | None
    connector_resource_id_attr: str | None
    is_custom: bool
    user_id: uuid.UUID | None
    created: dt.datetime
    updated: dt.datetime
    local: bool = False
    """Whether it runs on the client's machine is its code's to say, which the server
    has not: it is taken as remote."""
    secret_fields: frozenset[str] = frozenset()

    @classmethod
    def of(cls, row: CustomFlavor) -> StoredFlavor:
        """``display_name`` unset: the name, title-cased, as the reference shows it."""
        return cls(
            id=row.id,
            name=row.name,
            component_type=StackComponentType(row.type),
            display_name=row.display_name or row.name.replace("_", " ").title(),
            source=row.source,
            schema=row.config_schema,
            integration=row.integration,
            logo_url=row.logo_url,
            docs_url=row.docs_url,
            sdk_docs_url=row.sdk_docs_url,
            connector_type=row.connector_type,
            connector_resource_type=row.connector_resource_type,
            connector_resource_id_attr=row.connector_resource_id_attr,
            is_custom=row.is_custom,
            user_id=row.user_id,
            created=row.created,
            updated=row.updated,
        )

    def config_schema(self) -> dict[str, Any]:
        return self.schema

    def validate_config(self, configuration: dict[str, Any]) -> dict[str, Any]:
        return configuration


AnyFlavor = Flavor | StoredFlavor


async def flavors_of(
    session: AsyncSession, keys: Iterable[FlavorKey]
) -> dict[FlavorKey, AnyFlavor]:
    """The flavors of these (type, name) keys that exist: built-in ones from the code,
    custom ones in one query."""
    wanted = set(keys)
    found: dict[FlavorKey, AnyFlavor] = {k: BUILT_IN[k] for k in wanted if k in BUILT_IN}
    custom = wanted - found.keys()
    if custom:
        rows = await session.exec(
            select(CustomFlavor).where(
                tuple_(col(CustomFlavor.type), col(CustomFlavor.name)).in_(sorted(custom))
            )
        )
        found.update({(row.type, row.name): StoredFlavor.of(row) for row in rows})
    return found


async def find_flavor(session: AsyncSession, component_type: str, name: str) -> AnyFlavor:
    """The flavor a component names (404 ``KeyError`` when none, as the reference)."""
    key = (StackComponentType(component_type).value, name)
    flavor = (await flavors_of(session, [key])).get(key)
    if flavor is None:
        raise FlavorNotFound(name, component_type)
    return flavor


def flavor_of(flavors: dict[FlavorKey, AnyFlavor], component: Any) -> AnyFlavor:
    """The flavor of a component among ``flavors`` (as :func:`flavors_of` found them)."""
    flavor = flavors.get((component.type, component.flavor))
    if flavor is None:
        raise FlavorNotFound(component.flavor, component.type)
    return flavor
