"""Business rules for stacks: unique names, compositions of existing components of the
right types, and the default stack stays as it is."""

from __future__ import annotations

import uuid

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import flush_unique, utcnow
from shared.errors import BadRequest, Conflict, Forbidden, NotFound
from shared.listing import Listing
from tracking.bootstrap import DEFAULT_STACK
from tracking.component.repository import ComponentRepository
from tracking.component.schemas import UserScopeQuery
from tracking.component.service import ComponentNotFound, ConnectorNotFound
from tracking.flavor.custom import flavors_of
from tracking.models import Stack, StackComponent
from tracking.project.service import copy_given
from tracking.secret.service import SecretLookup
from tracking.stack.repository import StackRepository
from tracking.stack.schemas import ComposedStack, Composition, StackRequest, StackUpdate


class StackNotFound(NotFound):
    def __init__(self, stack_id: object) -> None:
        super().__init__(f"Unable to get stack with ID '{stack_id}': No stack with this ID found")


class StackAlreadyExists(Conflict):
    def __init__(self, name: str, action: str = "create") -> None:
        super().__init__(
            f"Unable to {action} the requested stack with name '{name}': "
            "Found another existing stack with the same name."
        )


class ComponentOfWrongType(BadRequest):
    def __init__(self, component: StackComponent, wanted: str) -> None:
        super().__init__(
            f"The stack component '{component.name}' ({component.id}) is a "
            f"{component.type}, not a {wanted}."
        )


class StackService:
    def __init__(self, session: AsyncSession) -> None:
        self.repository = StackRepository(session)
        self.components = ComponentRepository(session)
        self.lookup = SecretLookup(session)

    async def get(self, stack_id: uuid.UUID) -> Stack:
        stack = await self.repository.get(stack_id)
        if stack is None:
            raise StackNotFound(stack_id)
        return stack

    async def list_page(
        self, listing: Listing, scope: UserScopeQuery, viewer: uuid.UUID | None
    ) -> tuple[int, list[ComposedStack]]:
        total, stacks = await self.repository.page(listing, scope)
        return total, await self.composed(stacks, viewer, hydrate=listing.hydrate)

    async def composed(
        self, stacks: list[Stack], viewer: uuid.UUID | None, *, hydrate: bool = True
    ) -> list[ComposedStack]:
        """The stacks with their components and the linked secrets ``viewer`` may see when
        hydrating (one query for each, for all)."""
        if not hydrate:
            return [ComposedStack(s) for s in stacks]
        components = await self.repository.components_of([s.id for s in stacks])
        secrets = await self.lookup.shown([s.secrets for s in stacks], viewer)
        keys = ((c.type, c.flavor) for found in components.values() for c in found)
        flavors = await flavors_of(self.repository.session, keys)
        return [
            ComposedStack(s, components[s.id], shown, flavors)
            for s, shown in zip(stacks, secrets, strict=True)
        ]

    async def create(self, request: StackRequest, user_id: uuid.UUID) -> Stack:
        secrets = await self.lookup.ids(request.secrets or [], user_id)
        for connector in request.service_connectors:
            # Components are given here as registered ones (ids), so a connector a full
            # stack request names has no new component to serve: it must exist, and a
            # new one is registered on its own first.
            if not isinstance(connector, uuid.UUID):
                raise BadRequest(
                    "A stack is made here of registered components: register the service "
                    "connector first (POST /api/v1/service_connectors)."
                )
            if await self.components.connector(connector) is None:
                raise ConnectorNotFound(connector)
        component_ids = await self._check_composition(request.components)
        stack = Stack(
            name=request.name,
            description=request.description,
            stack_spec_path=request.stack_spec_path,
            environment=request.environment or {},
            secrets=[str(i) for i in secrets],
            labels=request.labels,
            user_id=user_id,
        )
        self.repository.add(stack)
        await flush_unique(self.repository.session, StackAlreadyExists(request.name))
        await self.repository.set_components(stack, component_ids)
        await self.repository.session.flush()
        return stack

    async def update(self, stack: Stack, update: StackUpdate, viewer: uuid.UUID | None) -> Stack:
        if stack.name == DEFAULT_STACK:
            raise Forbidden("The default stack cannot be modified.")
        if update.add_secrets or update.remove_secrets:
            stack.secrets = await self.lookup.relinked(
                stack.secrets, update.add_secrets, update.remove_secrets, viewer
            )
        if update.components is not None:
            await self.repository.set_components(
                stack, await self._check_composition(update.components)
            )
        copy_given(
            stack, update, ("name", "description", "stack_spec_path", "environment", "labels")
        )
        stack.updated = utcnow()
        self.repository.add(stack)
        await flush_unique(self.repository.session, StackAlreadyExists(stack.name, "update"))
        return stack

    async def delete(self, stack: Stack) -> None:
        """The stack goes; its components stay (they may serve other stacks)."""
        if stack.name == DEFAULT_STACK:
            raise Forbidden("The default stack cannot be deleted.")
        await self.repository.delete(stack)
        await self.repository.session.flush()

    async def _check_composition(self, composition: Composition) -> list[uuid.UUID]:
        """Every id names an existing component of the type it is listed under."""
        listed = [(cid, str(t)) for t, ids in composition.items() for cid in ids]
        found = await self.components.many({cid for cid, _ in listed})
        for component_id, component_type in listed:
            component = found.get(component_id)
            if component is None:
                raise ComponentNotFound(component_id)
            if component.type != component_type:
                raise ComponentOfWrongType(component, component_type)
        return list(dict.fromkeys(cid for cid, _ in listed))
