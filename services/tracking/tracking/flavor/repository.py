"""The flavors tracking knows: the built-in ones (:data:`~tracking.component.flavors.FLAVORS`,
a registry in code, as rows of a ``VALUES`` list) and the custom ones (``custom_flavors``),
one union filtered, sorted and paged by the one list engine like every table."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import String, Uuid, cast, column, func, union_all, values
from sqlalchemy import select as sa_select
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import Kind, Listing, ListSpec, SortKey, base_fields, column_field, fetch_page
from shared.users import user_field
from tracking.component.flavors import FLAVORS
from tracking.models import CustomFlavor, StackComponent

_DATETIME = CustomFlavor.__table__.c.created.type  # type: ignore[attr-defined]
_BUILT_IN = values(
    column("id", Uuid()),
    column("created", _DATETIME),
    column("updated", _DATETIME),
    column("user_id", Uuid()),
    column("name", String()),
    column("display_name", String()),
    column("type", String()),
    column("integration", String()),
    name="built_in_flavors",
).data(
    [
        (
            f.id,
            f.created,
            f.updated,
            None,
            f.name,
            f.display_name,
            f.component_type.value,
            f.integration,
        )
        for f in FLAVORS
    ]
)
B = _BUILT_IN.c
_C = CustomFlavor.__table__.c  # type: ignore[attr-defined]
_ALL = union_all(
    # Every built-in flavor's user is NULL, from which PostgreSQL types the VALUES column
    # as text; the union and the user filter want uuids.
    sa_select(
        B.id,
        B.created,
        B.updated,
        cast(B.user_id, Uuid()).label("user_id"),
        B.name,
        B.display_name,
        B.type,
        B.integration,
    ),
    # The custom flavors' display name as stored (null when none was given), which the
    # reference filters and sorts by.
    sa_select(
        _C.id,
        _C.created,
        _C.updated,
        _C.user_id,
        _C.name,
        _C.display_name,
        _C.type,
        _C.integration,
    ),
).subquery("flavors")
F = _ALL.c
USER_ID = F.user_id
_STRINGS = ("name", "display_name", "type", "integration")

FLAVOR_LIST = ListSpec(
    resource="flavor",
    id_column=F.id,
    fields=[
        *base_fields(F.id, F.created, F.updated),
        user_field(USER_ID),
        *(column_field(name, F[name], Kind.STRING) for name in _STRINGS),
    ],
    sort_keys=[
        *(SortKey(name, F[name]) for name in ("created", "updated", "id", *_STRINGS)),
        SortKey("user", USER_ID),
    ],
)
_PAGE = sa_select(F.id)


class FlavorRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def page(self, listing: Listing, conditions: list[Any]) -> tuple[int, list[uuid.UUID]]:
        """The total and the page's flavor ids, built-in and custom."""
        total, rows = await fetch_page(
            self.session, FLAVOR_LIST, listing, _PAGE, scope=conditions, core=True
        )
        return total, [row.id for row in rows]

    async def custom(self, ids: list[uuid.UUID]) -> dict[uuid.UUID, CustomFlavor]:
        if not ids:
            return {}
        rows = await self.session.exec(select(CustomFlavor).where(col(CustomFlavor.id).in_(ids)))
        return {row.id: row for row in rows}

    async def get(self, flavor_id: uuid.UUID) -> CustomFlavor | None:
        return await self.session.get(CustomFlavor, flavor_id)

    async def components_of(self, component_type: str, name: str) -> int:
        """How many components are of the flavor."""
        query = select(func.count()).where(
            col(StackComponent.type) == component_type, col(StackComponent.flavor) == name
        )
        return (await self.session.exec(query)).one()

    def add(self, flavor: CustomFlavor) -> None:
        self.session.add(flavor)

    async def delete(self, flavor: CustomFlavor) -> None:
        await self.session.delete(flavor)
        await self.session.flush()
