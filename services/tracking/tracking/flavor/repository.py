"""The flavors tracking knows (:data:`~tracking.component.flavors.FLAVORS`, a registry in
code) as rows of a ``VALUES`` list, so they are filtered, sorted and paged by the one list
engine like every table."""

from __future__ import annotations

from typing import Any

from sqlalchemy import String, Uuid, cast, column, values
from sqlalchemy import select as sa_select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import Kind, Listing, ListSpec, SortKey, base_fields, column_field, fetch_page
from shared.users import user_field
from tracking.component.flavors import FLAVORS
from tracking.models import Tag

_DATETIME = Tag.__table__.c.created.type  # type: ignore[attr-defined]
_ROWS = values(
    column("id", Uuid()),
    column("created", _DATETIME),
    column("updated", _DATETIME),
    column("user_id", Uuid()),
    column("name", String()),
    column("display_name", String()),
    column("type", String()),
    column("integration", String()),
    name="flavors",
).data(
    [
        (
            f.id,
            f.created,
            f.created,
            None,
            f.name,
            f.display_name,
            f.component_type.value,
            f.integration,
        )
        for f in FLAVORS
    ]
)
F = _ROWS.c
# Every flavor's user is NULL, from which PostgreSQL types the VALUES column as text; the
# user filter compares it with uuids.
USER_ID = cast(F.user_id, Uuid())
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


async def flavor_page(
    session: AsyncSession, listing: Listing, conditions: list[Any]
) -> tuple[int, list[Any]]:
    """The total and the page's flavor ids."""
    total, rows = await fetch_page(
        session, FLAVOR_LIST, listing, _PAGE, scope=conditions, core=True
    )
    return total, [row.id for row in rows]
