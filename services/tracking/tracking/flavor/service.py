"""Reading the flavors tracking knows (built in, never created through the API)."""

from __future__ import annotations

import uuid

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import Listing
from tracking.component.flavors import FLAVORS, Flavor
from tracking.core.errors import ScopedNotFound
from tracking.core.listing import scope_conditions
from tracking.flavor.repository import USER_ID, flavor_page
from tracking.flavor.schemas import FlavorListQuery

_BY_ID = {flavor.id: flavor for flavor in FLAVORS}


class FlavorIdNotFound(ScopedNotFound):
    resource = "flavor"


class FlavorService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def list_page(self, listing: Listing, query: FlavorListQuery) -> tuple[int, list[Flavor]]:
        conditions = scope_conditions([(USER_ID, query.scope_user)])
        total, ids = await flavor_page(self.session, listing, conditions)
        return total, [_BY_ID[flavor_id] for flavor_id in ids]


def flavor_by_id(flavor_id: uuid.UUID) -> Flavor:
    """A flavor by its id (404 when unknown); the registry is in code, no query."""
    flavor = _BY_ID.get(flavor_id)
    if flavor is None:
        raise FlavorIdNotFound(flavor_id)
    return flavor
