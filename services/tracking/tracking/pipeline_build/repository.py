"""Pipeline build queries and the list declaration."""

from __future__ import annotations

from typing import Any

from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import (
    Condition,
    Field,
    Kind,
    ListSpec,
    SortKey,
    base_fields,
    column_field,
)
from shared.listing.sql import condition_sql
from shared.users import user_field
from tracking.core.repository import ScopedRepository
from tracking.models import PipelineBuild, StackComponent, StackComposition

B = PipelineBuild


def _container_registry(cond: Condition) -> ColumnElement[bool]:
    """Builds for a stack with a matching container registry."""
    registries = (
        select(col(StackComposition.stack_id))
        .join(StackComponent, col(StackComponent.id) == col(StackComposition.component_id))
        .where(
            col(StackComponent.type) == "container_registry",
            condition_sql(col(StackComponent.id), Kind.UUID, cond),
        )
    )
    return col(B.stack_id).in_(registries)


_COLUMNS = (
    ("pipeline_id", Kind.UUID),
    ("stack_id", Kind.UUID),
    ("is_local", Kind.BOOL),
    ("contains_code", Kind.BOOL),
    ("zenml_version", Kind.STRING),
    ("python_version", Kind.STRING),
    ("checksum", Kind.STRING),
    ("stack_checksum", Kind.STRING),
    ("duration", Kind.INT),
)

PIPELINE_BUILDS = ListSpec(
    resource="pipeline_build",
    id_column=col(B.id),
    fields=[
        *base_fields(col(B.id), col(B.created), col(B.updated)),
        user_field(col(B.user_id)),
        *(column_field(name, col(getattr(B, name)), kind) for name, kind in _COLUMNS),
        Field(
            name="container_registry_id",
            kind=Kind.UUID,
            build=_container_registry,
            description="The container registry of the build's stack.",
        ),
    ],
    sort_keys=[
        SortKey("created", col(B.created)),
        SortKey("updated", col(B.updated)),
        SortKey("id", col(B.id)),
        SortKey("user", col(B.user_id)),
        *(SortKey(name, col(getattr(B, name))) for name, _ in _COLUMNS),
    ],
)


class PipelineBuildRepository(ScopedRepository[Any]):
    """Builds have no name: only reads, pages and deletes of the base are used."""

    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, PipelineBuild)
