from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection

from sqlalchemy import delete
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import (
    Kind,
    Listing,
    ListSpec,
    SortKey,
    base_fields,
    column_field,
    fetch_page,
    name_or_id,
)
from shared.users import user_field
from tracking.component.schemas import UserScopeQuery
from tracking.core.listing import linked_field, scope_conditions
from tracking.models import Stack, StackComponent, StackComposition

# A stack's component by name or id, on the stack's composition rows (a list's filter
# by a component of its rows' stack).
COMPOSED_COMPONENT = name_or_id(
    "component",
    col(StackComposition.component_id),
    target_id=col(StackComponent.id),
    target_names=[col(StackComponent.name)],
)

STACKS = ListSpec(
    resource="stack",
    id_column=col(Stack.id),
    fields=[
        *base_fields(col(Stack.id), col(Stack.created), col(Stack.updated)),
        user_field(col(Stack.user_id)),
        column_field("name", col(Stack.name), Kind.STRING),
        column_field("description", col(Stack.description), Kind.STRING),
        linked_field(
            "component_id",
            col(Stack.id),
            col(StackComposition.stack_id),
            column_field("component_id", col(StackComposition.component_id), Kind.UUID),
            "Component in the stack",
        ),
        linked_field(
            "component",
            col(Stack.id),
            col(StackComposition.stack_id),
            COMPOSED_COMPONENT,
            "Name/ID of a component in the stack.",
        ),
    ],
    sort_keys=[
        SortKey(name, col(getattr(Stack, name)))
        for name in ("created", "updated", "id", "name", "description")
    ],
)


class StackRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, stack_id: uuid.UUID) -> Stack | None:
        return await self.session.get(Stack, stack_id)

    async def page(self, listing: Listing, scope: UserScopeQuery) -> tuple[int, list[Stack]]:
        conditions = scope_conditions([(col(Stack.user_id), scope.scope_user)])
        return await fetch_page(self.session, STACKS, listing, select(Stack), scope=conditions)

    async def components_of(
        self, stack_ids: Collection[uuid.UUID]
    ) -> dict[uuid.UUID, list[StackComponent]]:
        """Each stack's components (by name within a type), in one query."""
        found: dict[uuid.UUID, list[StackComponent]] = defaultdict(list)
        if not stack_ids:
            return found
        query = (
            select(StackComposition.stack_id, StackComponent)
            .join(StackComponent, col(StackComponent.id) == col(StackComposition.component_id))
            .where(col(StackComposition.stack_id).in_(list(stack_ids)))
            .order_by(col(StackComponent.type), col(StackComponent.name))
        )
        for stack_id, component in (await self.session.exec(query)).all():
            found[stack_id].append(component)
        return found

    async def set_components(self, stack: Stack, component_ids: Collection[uuid.UUID]) -> None:
        await self.session.exec(
            delete(StackComposition).where(col(StackComposition.stack_id) == stack.id)
        )
        for component_id in component_ids:
            self.session.add(StackComposition(stack_id=stack.id, component_id=component_id))

    def add(self, stack: Stack) -> None:
        self.session.add(stack)

    async def delete(self, stack: Stack) -> None:
        await self.session.delete(stack)
