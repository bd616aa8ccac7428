"""Business rules for stack components: known flavors (built in or custom), valid
configurations (of the built-in flavors; a custom one's are the client's to check), unique
(type, name), and the default stack's components stay as they are."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import flush_unique, utcnow
from shared.errors import Conflict, Forbidden, NotFound
from shared.listing import Listing
from tracking.bootstrap import DEFAULT_STACK
from tracking.component.flavors import StackComponentType
from tracking.component.repository import ComponentRepository
from tracking.component.schemas import (
    ComponentRequest,
    ComponentScopeQuery,
    ComponentUpdate,
    LinkedComponent,
)
from tracking.component.secrets import ComponentSecrets
from tracking.flavor.custom import find_flavor, flavor_of, flavors_of
from tracking.models import ServiceConnector, StackComponent
from tracking.project.service import copy_given
from tracking.secret.service import SecretLookup

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


class ConnectorNotFound(NotFound):
    def __init__(self, connector_id: object) -> None:
        super().__init__(
            f"Unable to get service connector with ID '{connector_id}': "
            "No service connector with this ID found"
        )


def is_protected(component: StackComponent) -> bool:
    return component.name == DEFAULT_STACK and component.type in PROTECTED_TYPES


class ComponentService:
    def __init__(self, session: AsyncSession, secrets: ComponentSecrets) -> None:
        self.repository = ComponentRepository(session)
        self.secrets = secrets
        self.lookup = SecretLookup(session)

    async def get(self, component_id: uuid.UUID) -> StackComponent:
        component = await self.repository.get(component_id)
        if component is None:
            raise ComponentNotFound(component_id)
        return component

    async def read(self, component_id: uuid.UUID, viewer: uuid.UUID | None) -> LinkedComponent:
        """A component with its service connector and linked secrets, to render."""
        [item] = await self.linked([await self.get(component_id)], viewer)
        return item

    async def list_page(
        self, listing: Listing, scope: ComponentScopeQuery, viewer: uuid.UUID | None
    ) -> tuple[int, list[LinkedComponent]]:
        total, components = await self.repository.page(listing, scope)
        return total, await self.linked(components, viewer)

    async def linked(
        self, components: Sequence[StackComponent], viewer: uuid.UUID | None
    ) -> list[LinkedComponent]:
        """Each component with its connector (one query for all of them) and the linked
        secrets ``viewer`` may see (one query)."""
        ids = {c.connector_id for c in components if c.connector_id is not None}
        connectors = await self.repository.connectors(ids)
        shown = await self.lookup.shown([c.secrets for c in components], viewer)
        flavors = await flavors_of(
            self.repository.session, ((c.type, c.flavor) for c in components)
        )
        return [
            LinkedComponent(
                c,
                flavor_of(flavors, c),
                connectors.get(c.connector_id) if c.connector_id else None,
                s,
            )
            for c, s in zip(components, shown, strict=True)
        ]

    async def _connector(self, connector_id: uuid.UUID | None) -> ServiceConnector | None:
        if connector_id is None:
            return None
        connector = await self.repository.connector(connector_id)
        if connector is None:
            raise ConnectorNotFound(connector_id)
        return connector

    async def create(self, request: ComponentRequest, user_id: uuid.UUID) -> LinkedComponent:
        flavor = await find_flavor(self.repository.session, request.type, request.flavor)
        configuration = flavor.validate_config(request.configuration)
        connector = await self._connector(request.connector)
        secrets = await self.lookup.ids(request.secrets or [], user_id)
        clear, encrypted = self.secrets.seal(flavor, configuration, stored={})
        component = StackComponent(
            name=request.name,
            type=request.type,
            flavor=request.flavor,
            configuration=clear,
            encrypted_secrets=encrypted,
            environment=request.environment or {},
            secrets=[str(i) for i in secrets],
            labels=request.labels,
            connector_resource_id=request.connector_resource_id,
            connector_id=connector.id if connector else None,
            user_id=user_id,
        )
        self.repository.add(component)
        await flush_unique(
            self.repository.session, ComponentAlreadyExists(request.type, request.name)
        )
        return LinkedComponent(component, flavor, connector, secrets)

    async def update(
        self, component_id: uuid.UUID, update: ComponentUpdate, viewer: uuid.UUID | None
    ) -> LinkedComponent:
        """As on the reference, an update links the connector it names, with its
        ``connector_resource_id``, and one naming none unlinks the component (the
        client always sends the link to keep)."""
        component = await self.get(component_id)
        if is_protected(component):
            raise Forbidden(f"The default {component.type} cannot be modified.")
        connector = await self._connector(update.connector)
        if update.add_secrets or update.remove_secrets:
            component.secrets = await self.lookup.relinked(
                component.secrets, update.add_secrets, update.remove_secrets, viewer
            )
        if update.configuration is not None:
            flavor = await find_flavor(self.repository.session, component.type, component.flavor)
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
        [item] = await self.linked([component], viewer)
        return item

    async def delete(self, component_id: uuid.UUID) -> None:
        component = await self.get(component_id)
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
