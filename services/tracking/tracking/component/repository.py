from __future__ import annotations

import uuid
from collections.abc import Collection

from sqlalchemy import func
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import Kind, Listing, ListSpec, SortKey, base_fields, column_field, fetch_page
from shared.users import user_field
from tracking.component.schemas import ComponentScopeQuery
from tracking.core.listing import linked_field, scope_conditions
from tracking.models import ServiceConnector, StackComponent, StackComposition

COMPONENTS = ListSpec(
    resource="component",
    id_column=col(StackComponent.id),
    fields=[
        *base_fields(
            col(StackComponent.id), col(StackComponent.created), col(StackComponent.updated)
        ),
        user_field(col(StackComponent.user_id)),
        column_field("name", col(StackComponent.name), Kind.STRING),
        column_field("flavor", col(StackComponent.flavor), Kind.STRING),
        column_field("type", col(StackComponent.type), Kind.STRING),
        column_field("connector_id", col(StackComponent.connector_id), Kind.UUID),
        linked_field(
            "stack_id",
            col(StackComponent.id),
            col(StackComposition.component_id),
            column_field("stack_id", col(StackComposition.stack_id), Kind.UUID),
            "Stack of the stack component",
        ),
    ],
    sort_keys=[
        SortKey(name, col(getattr(StackComponent, name)))
        for name in ("created", "updated", "id", "name", "flavor", "type")
    ],
)


class ComponentRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, component_id: uuid.UUID) -> StackComponent | None:
        return await self.session.get(StackComponent, component_id)

    async def connector(self, connector_id: uuid.UUID) -> ServiceConnector | None:
        return await self.session.get(ServiceConnector, connector_id)

    async def connectors(self, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, ServiceConnector]:
        """The connectors ``ids`` name, in one query."""
        if not ids:
            return {}
        query = select(ServiceConnector).where(col(ServiceConnector.id).in_(list(ids)))
        return {c.id: c for c in (await self.session.exec(query)).all()}

    async def many(self, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, StackComponent]:
        query = select(StackComponent).where(col(StackComponent.id).in_(list(ids)))
        return {c.id: c for c in (await self.session.exec(query)).all()}

    async def page(
        self, listing: Listing, scope: ComponentScopeQuery
    ) -> tuple[int, list[StackComponent]]:
        conditions = scope_conditions(
            [
                (col(StackComponent.user_id), scope.scope_user),
                (col(StackComponent.type), scope.scope_type),
            ]
        )
        return await fetch_page(
            self.session, COMPONENTS, listing, select(StackComponent), scope=conditions
        )

    async def stack_count(self, component_id: uuid.UUID) -> int:
        query = select(func.count()).where(StackComposition.component_id == component_id)
        return int((await self.session.exec(query)).one())

    def add(self, component: StackComponent) -> None:
        self.session.add(component)

    async def delete(self, component: StackComponent) -> None:
        await self.session.delete(component)
