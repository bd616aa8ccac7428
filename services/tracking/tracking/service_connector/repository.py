"""Service connector queries and the list declaration."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import cast, func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import flush_unique
from shared.errors import Conflict
from shared.listing import Kind, Listing, ListSpec, SortKey, column_field, fetch_page
from tracking.core.listing import scoped_fields, scoped_sort_keys
from tracking.models import ServiceConnector, StackComponent

CONNECTORS = ListSpec(
    resource="service_connector",
    id_column=col(ServiceConnector.id),
    fields=[
        *scoped_fields(ServiceConnector),  # type: ignore[arg-type]
        column_field(
            "connector_type",
            col(ServiceConnector.connector_type),
            Kind.STRING,
            description="The type of service connector to filter by",
        ),
        column_field(
            "auth_method",
            col(ServiceConnector.auth_method),
            Kind.STRING,
            description="Filter by the authentication method configured for the connector",
        ),
    ],
    sort_keys=[
        *scoped_sort_keys(ServiceConnector),  # type: ignore[arg-type]
        *(
            SortKey(name, col(getattr(ServiceConnector, name)))
            for name in ("connector_type", "auth_method", "resource_id", "supports_instances")
        ),
    ],
)


def conditions(
    resource_type: str | None,
    resource_id: str | None,
    labels: dict[str, str | None] | None,
    scope_user: uuid.UUID | None = None,
) -> list[ColumnElement[bool]]:
    """The reference's filters past plain columns: a resource type among the connector's,
    its resource id, labels (a label without a value: present with any value) and the
    creator (``scope_user``)."""
    found: list[ColumnElement[bool]] = []
    if scope_user is not None:
        found.append(col(ServiceConnector.user_id) == scope_user)
    if resource_type is not None:
        found.append(cast(col(ServiceConnector.resource_types), JSONB).contains([resource_type]))
    if resource_id is not None:
        found.append(col(ServiceConnector.resource_id) == resource_id)
    for key, value in (labels or {}).items():
        stored = cast(col(ServiceConnector.labels), JSONB)
        found.append(stored.has_key(key) if value is None else stored.contains({key: value}))
    return found


class ServiceConnectorRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, connector_id: uuid.UUID, *, lock: bool = False) -> ServiceConnector | None:
        return await self.session.get(ServiceConnector, connector_id, with_for_update=lock)

    async def page(
        self, listing: Listing, scope: Sequence[ColumnElement[bool]]
    ) -> tuple[int, Sequence[Any]]:
        return await fetch_page(
            self.session, CONNECTORS, listing, select(ServiceConnector), scope=scope
        )

    async def component_count(self, connector_id: uuid.UUID) -> int:
        statement = select(func.count()).where(col(StackComponent.connector_id) == connector_id)
        return int((await self.session.exec(statement)).one())

    async def add(self, connector: ServiceConnector, clash: Conflict) -> None:
        """Write ``connector``; the unique name index answers ``clash`` (409)."""
        self.session.add(connector)
        await flush_unique(self.session, clash)

    async def delete(self, connector: ServiceConnector) -> None:
        await self.session.delete(connector)
        await self.session.flush()
