"""Service queries and the list declaration (the reference's filters: type, flavor, the
pipeline and step that deployed it, its model version and run)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, true
from sqlalchemy import select as sa_select
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import Field, Kind, ListSpec, column_field
from tracking.core.listing import scoped_fields, scoped_sort_keys
from tracking.core.repository import ScopedRepository
from tracking.models import Service


def _ignored(name: str, kind: Kind, description: str) -> Field:
    """A parameter the reference accepts and does not filter by."""
    return Field(name=name, kind=kind, build=lambda cond: true(), description=description)


SERVICES = ListSpec(
    resource="service",
    id_column=col(Service.id),
    fields=[
        *scoped_fields(Service),
        column_field("type", col(Service.type), Kind.STRING),
        column_field("flavor", col(Service.flavor), Kind.STRING),
        column_field("pipeline_name", col(Service.pipeline_name), Kind.STRING),
        column_field("pipeline_step_name", col(Service.pipeline_step_name), Kind.STRING),
        column_field("model_version_id", col(Service.model_version_id), Kind.UUID),
        column_field("pipeline_run_id", col(Service.pipeline_run_id), Kind.UUID),
        _ignored("running", Kind.BOOL, "Accepted and not filtered by, as the reference."),
        _ignored("config", Kind.STRING, "Accepted and not filtered by, as the reference."),
    ],
    sort_keys=scoped_sort_keys(Service),
)


class ServiceRepository(ScopedRepository[Service]):
    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, Service)

    async def config_taken(self, config: str) -> bool:
        """Whether a service (of any project) has this configuration text."""
        query: Select[Any] = sa_select(col(Service.id)).where(col(Service.config) == config)
        return (await self.session.exec(query.limit(1))).first() is not None  # type: ignore[call-overload]
