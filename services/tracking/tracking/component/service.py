"""Business rules for stack components: known flavors, valid configurations, unique
(type, name), and the default stack's components stay as they are."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import flush_unique, utcnow
from shared.errors import Conflict, Forbidden, NotFound
from shared.listing import Listing
from tracking.bootstrap import DEFAULT_STACK
from tracking.component.flavors import StackComponentType, flavor_for
from tracking.component.repository import ComponentRepository
from tracking.component.schemas import (
    ComponentRequest,
    ComponentScopeQuery,
    ComponentUpdate,
    LinkedComponent,
    SecretRef,
)
from tracking.component.secrets import ComponentSecrets
from tracking.models import ServiceConnector, StackComponent
from tracking.project.service import copy_given

# The reference's default stack components, which it will not modify or delete.
PROTECTED_TYPES = frozenset(
    {
        StackComponentType.ORCHESTRATOR,
        StackComponentType.DEPLOYER,
        StackComponentType.ARTIFACT_STORE,
    }
)


class ComponentNotFound(NotFound):
    def __init__(self, component_id: object) -> None:
        super().__init__(
            f"Unable to get stack component with ID '{component_id}': "
            "No stack component with this ID found"
        )


class ComponentAlreadyExists(Conflict):
    def __init__(self, component_type: str, name: str) -> None:
        super().__init__(
            f"Unable to register '{component_type}' component with name '{name}': Found an "
            "existing component with the same name and type."
        )


class SecretNotFound(NotFound):
    def __init__(self, name_or_id: object) -> None:
        super().__init__(
            f"Unable to get secret with name or ID '{name_or_id}': "
            "No secret with this name or ID found"
        )


class ConnectorNotFound(NotFound):
    def __init__(self, connector_id: object) -> None:
        super().__init__(
            f"Unable to get service connector with ID '{connector_id}': "
            "No service connector with this ID found"
        )


def refuse_secrets(secrets: Sequence[SecretRef] | None) -> None:
    """Components do not link secrets here (the reference's ``secrets`` list of a
    component): a secret a request names is answered as not found."""
    if secrets:
        raise SecretNotFound(secrets[0])


def is_protected(component: StackComponent) -> bool:
    return component.name == DEFAULT_STACK and component.type in PROTECTED_TYPES


class ComponentService:
    def __init__(self, session: AsyncSession, secrets: ComponentSecrets) -> None:
        self.repository = ComponentRepository(session)
        self.secrets = secrets

    async def get(self, component_id: uuid.UUID) -> StackComponent:
        component = await self.repository.get(component_id)
        if component is None:
            raise ComponentNotFound(component_id)
        return component

    async def read(self, component_id: uuid.UUID) -> LinkedComponent:
        """A component with its service connector, to render."""
        [item] = await self._linked([await self.get(component_id)])
        return item

    async def list_page(
        self, listing: Listing, scope: ComponentScopeQuery
    ) -> tuple[int, list[LinkedComponent]]:
        total, components = await self.repository.page(listing, scope)
        return total, await self._linked(components)

    async def _linked(self, components: Sequence[StackComponent]) -> list[LinkedComponent]:
        """Each component with its connector (one query for all of them)."""
        ids = {c.connector_id for c in components if c.connector_id is not None}
        connectors = await self.repository.connectors(ids)
        return [
            LinkedComponent(c, connectors.get(c.connector_id) if c.connector_id else None)
            for c in components
        ]

    async def _connector(self, connector_id: uuid.UUID | None) -> ServiceConnector | None:
        if connector_id is None:
            return None
        connector = await self.repository.connector(connector_id)
        if connector is None:
            raise ConnectorNotFound(connector_id)
        return connector

    async def create(self, request: ComponentRequest, user_id: uuid.UUID) -> LinkedComponent:
        flavor = flavor_for(request.type, request.flavor)
        configuration = flavor.validate_config(request.configuration)
        refuse_secrets(request.secrets)
        connector = await self._connector(request.connector)
        clear, encrypted = self.secrets.seal(flavor, configuration, stored={})
        component = StackComponent(
            name=request.name,
            type=request.type,
            flavor=request.flavor,
            configuration=clear,
            encrypted_secrets=encrypted,
            environment=request.environment or {},
            labels=request.labels,
            connector_resource_id=request.connector_resource_id,
            connector_id=connector.id if connector else None,
            user_id=user_id,
        )
        self.repository.add(component)
        await flush_unique(
            self.repository.session, ComponentAlreadyExists(request.type, request.name)
        )
        return LinkedComponent(component, connector)

    async def update(self, component: StackComponent, update: ComponentUpdate) -> LinkedComponent:
        """As on the reference, an update links the connector it names, with its
        ``connector_resource_id``, and one naming none unlinks the component (the
        client always sends the link to keep)."""
        if is_protected(component):
            raise Forbidden(f"The default {component.type} cannot be modified.")
        refuse_secrets([*(update.add_secrets or []), *(update.remove_secrets or [])])
        connector = await self._connector(update.connector)
        if update.configuration is not None:
            flavor = flavor_for(component.type, component.flavor)
            configuration = flavor.validate_config(update.configuration)
            component.configuration, component.encrypted_secrets = self.secrets.seal(
                flavor, configuration, stored=component.encrypted_secrets
            )
        copy_given(component, update, ("name", "environment", "labels"))
        component.connector_id = connector.id if connector else None
        component.connector_resource_id = update.connector_resource_id if connector else None
        component.updated = utcnow()
        self.repository.add(component)
        await flush_unique(
            self.repository.session, ComponentAlreadyExists(component.type, component.name)
        )
        return LinkedComponent(component, connector)

    async def delete(self, component: StackComponent) -> None:
        if is_protected(component):
            raise Forbidden(f"The default {component.type} cannot be deleted.")
        stacks = await self.repository.stack_count(component.id)
        if stacks:
            raise Forbidden(
                f"Stack Component `{component.name}` of type `{component.type}` cannot be "
                f"deleted as it is part of {stacks} stacks. Before deleting this stack "
                "component, make sure to remove it from all stacks."
            )
        await self.repository.delete(component)
        await self.repository.session.flush()
