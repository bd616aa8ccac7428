"""Flavors: the built-in ones (code, never changed) and custom ones registered through
the API, unique by (type, name) across both, as the reference's table is.

As on the reference's open-source server, any user may register, change or delete a
custom flavor; a built-in flavor is neither changed nor deleted (403), and a flavor that
components use is not deleted, nor renamed or given another type (they name it by type
and name) (403)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import flush_unique, utcnow
from shared.errors import BadRequest, Conflict, Forbidden
from shared.listing import Listing
from tracking.component.flavors import BUILT_IN, FLAVORS
from tracking.core.errors import ScopedNotFound
from tracking.core.listing import scope_conditions
from tracking.flavor.custom import AnyFlavor, StoredFlavor
from tracking.flavor.repository import USER_ID, FlavorRepository
from tracking.flavor.schemas import FlavorListQuery, FlavorRequest, FlavorUpdate
from tracking.models import CustomFlavor

_BY_ID = {flavor.id: flavor for flavor in FLAVORS}
_REQUIRED = frozenset({"name", "source", "config_schema", "is_custom"})
SCHEMA_MAX_LENGTH = 65535
"""The reference's limit of a config schema's JSON text."""


class FlavorIdNotFound(ScopedNotFound):
    resource = "flavor"


class FlavorAlreadyExists(Conflict):
    pass


def _check_schema(schema: dict[str, Any] | None) -> None:
    if schema is not None and len(json.dumps(schema)) > SCHEMA_MAX_LENGTH:
        raise BadRequest("Json representation of configuration schema exceeds max length.")


class FlavorService:
    def __init__(self, session: AsyncSession) -> None:
        self.repository = FlavorRepository(session)

    async def list_page(
        self, listing: Listing, query: FlavorListQuery
    ) -> tuple[int, list[AnyFlavor]]:
        conditions = scope_conditions([(USER_ID, query.scope_user)])
        total, ids = await self.repository.page(listing, conditions)
        rows = await self.repository.custom([i for i in ids if i not in _BY_ID])
        custom = {i: StoredFlavor.of(row) for i, row in rows.items()}
        # A custom flavor deleted since the page was read is left out.
        found = [_BY_ID.get(i) or custom.get(i) for i in ids]
        return total, [flavor for flavor in found if flavor is not None]

    async def get(self, flavor_id: uuid.UUID) -> AnyFlavor:
        """A flavor by its id (404 when unknown)."""
        built_in = _BY_ID.get(flavor_id)
        if built_in is not None:
            return built_in
        return StoredFlavor.of(await self._custom(flavor_id))

    async def _custom(self, flavor_id: uuid.UUID) -> CustomFlavor:
        if flavor_id in _BY_ID:
            raise Forbidden(
                f"The flavor with ID '{flavor_id}' is built into this server: it cannot be "
                "changed or deleted."
            )
        row = await self.repository.get(flavor_id)
        if row is None:
            raise FlavorIdNotFound(flavor_id)
        return row

    async def create(self, request: FlavorRequest, user_id: uuid.UUID) -> StoredFlavor:
        # The reference's wording.
        taken = FlavorAlreadyExists(
            f"Unable to register '{request.type.value}' flavor with name '{request.name}' "
            f"and type '{request.type}': Found an existing flavor with the same name and "
            "type."
        )
        if (request.type.value, request.name) in BUILT_IN:
            raise taken
        _check_schema(request.config_schema)
        row = CustomFlavor(
            **request.model_dump(exclude={"user", "type"}),
            type=request.type.value,
            user_id=user_id if request.is_custom else None,
        )
        self.repository.add(row)
        await flush_unique(self.repository.session, taken)
        return StoredFlavor.of(row)

    async def update(self, flavor_id: uuid.UUID, update: FlavorUpdate) -> StoredFlavor:
        row = await self._custom(flavor_id)
        # A field the row must have, given as null, is left as it is.
        given = {
            k: v
            for k, v in update.model_dump(exclude_unset=True, exclude={"type"}).items()
            if v is not None or k not in _REQUIRED
        }
        _check_schema(update.config_schema)
        name = update.name or row.name
        component_type = update.type.value if update.type else row.type
        if (component_type, name) != (row.type, row.name):
            used = await self.repository.components_of(row.type, row.name)
            if used:
                raise Forbidden(
                    f"Flavor `{row.name}` of type `{row.type}` cannot be renamed or given "
                    f"another type as it is used by {used} components, which name it."
                )
        # The reference's wording.
        taken = FlavorAlreadyExists(
            f"Unable to update '{row.type}' flavor with name '{row.name}': Found an "
            "existing flavor with the same name and type."
        )
        if (component_type, name) in BUILT_IN:
            raise taken
        for field, value in given.items():
            setattr(row, field, value)
        row.type = component_type
        row.updated = utcnow()
        self.repository.add(row)
        await flush_unique(self.repository.session, taken)
        return StoredFlavor.of(row)

    async def delete(self, flavor_id: uuid.UUID) -> None:
        row = await self._custom(flavor_id)
        used = await self.repository.components_of(row.type, row.name)
        if used:
            # The reference's wording.
            raise Forbidden(
                f"Stack Component `{row.name}` of type `{row.type} cannot be deleted as it "
                f"is used by {used} components. Before deleting this flavor, make sure to "
                "delete all associated components."
            )
        await self.repository.delete(row)
