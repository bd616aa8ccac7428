"""Trigger queries and the list declaration."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

from sqlalchemy import Boolean, Table, bindparam
from sqlalchemy import select as sa_select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import (
    Condition,
    Field,
    Kind,
    Listing,
    ListSpec,
    SortKey,
    column_field,
    fetch_page,
)
from shared.listing.sql import condition_sql
from tracking.core.listing import scoped_fields, scoped_sort_keys
from tracking.core.repository import ScopedRepository
from tracking.models import PipelineSnapshot, Trigger, TriggerSnapshot
from tracking.trigger.schemas import TriggerFlavor, TriggerRunConcurrency, TriggerType

T = Trigger


def _attached(name: str, column: Any, description: str) -> Field:
    """Triggers attached to a snapshot whose ``column`` matches."""

    def build(cond: Condition) -> ColumnElement[bool]:
        attached = (
            sa_select(col(TriggerSnapshot.trigger_id))
            .join(PipelineSnapshot, col(PipelineSnapshot.id) == col(TriggerSnapshot.snapshot_id))
            .where(condition_sql(column, Kind.UUID, cond))
        )
        return col(T.id).in_(attached)

    return Field(name=name, kind=Kind.UUID, build=build, description=description)


TRIGGERS = ListSpec(
    resource="trigger",
    id_column=col(T.id),
    fields=[
        *scoped_fields(T),
        column_field("active", col(T.active), Kind.BOOL),
        column_field("flavor", col(T.flavor), Kind.ENUM, enum=TriggerFlavor),
        column_field("type", col(T.type), Kind.ENUM, enum=TriggerType),
        column_field("next_occurrence", col(T.next_occurrence), Kind.DATETIME),
        column_field("concurrency", col(T.concurrency), Kind.ENUM, enum=TriggerRunConcurrency),
        _attached(
            "pipeline_id",
            col(PipelineSnapshot.pipeline_id),
            "Triggers attached to this pipeline's snapshots",
        ),
        _attached("snapshot_id", col(PipelineSnapshot.id), "Triggers attached to this snapshot"),
    ],
    sort_keys=[
        *scoped_sort_keys(T),
        *(
            SortKey(name, col(getattr(T, name)))
            for name in ("active", "flavor", "type", "next_occurrence", "concurrency")
        ),
    ],
)

_SNAPSHOTS: Table = PipelineSnapshot.__table__  # type: ignore[attr-defined]


_ARCHIVED = col(T.is_archived) == bindparam("scope_archived", type_=Boolean())


class TriggerRepository(ScopedRepository[Trigger]):
    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, Trigger)

    async def page_archived(
        self,
        listing: Listing,
        project_id: uuid.UUID,
        scope_user: uuid.UUID | None,
        archived: bool,
    ) -> tuple[int, list[Any]]:
        """A page of the project's triggers, archived or not (the scope's third part)."""
        params: dict[str, Any] = {"scope_project": project_id, "scope_archived": archived}
        if scope_user is not None:
            params["scope_user"] = scope_user
        scope = (*self._scope(scope_user is not None), _ARCHIVED)
        return await fetch_page(
            self.session, TRIGGERS, listing, self.columns(), scope=scope, params=params, core=True
        )

    async def snapshots_of(
        self, ids: Collection[uuid.UUID]
    ) -> tuple[dict[uuid.UUID, list[Any]], dict[uuid.UUID, Any]]:
        """Each trigger's attached snapshots, and the source snapshots they show."""
        attached: dict[uuid.UUID, list[Any]] = {i: [] for i in ids}
        if not ids:
            return attached, {}
        query = (
            sa_select(col(TriggerSnapshot.trigger_id).label("trigger_id"), *_SNAPSHOTS.columns)
            .join(PipelineSnapshot, col(PipelineSnapshot.id) == col(TriggerSnapshot.snapshot_id))
            .where(col(TriggerSnapshot.trigger_id).in_(list(ids)))
            .order_by(col(TriggerSnapshot.created))
        )
        rows = (await self.session.exec(query)).all()  # type: ignore[call-overload]
        for row in rows:
            attached[row.trigger_id].append(row)
        source_ids = {row.source_snapshot_id for row in rows if row.source_snapshot_id}
        sources: dict[uuid.UUID, Any] = {}
        if source_ids:
            found = sa_select(*_SNAPSHOTS.columns).where(_SNAPSHOTS.c.id.in_(source_ids))
            sources = {r.id: r for r in (await self.session.exec(found)).all()}  # type: ignore[call-overload]
        return attached, sources
