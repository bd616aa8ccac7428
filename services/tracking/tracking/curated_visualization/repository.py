"""Curated visualization queries: a row, its artifact visualization (with the version's
project), the resource it is shown on, and the clashes the reference refuses."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Table
from sqlalchemy import select as sa_select
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute
from tracking.core.repository import rendered_columns
from tracking.curated_visualization.schemas import VisualizationResourceTypes
from tracking.models import (
    ArtifactVersion,
    ArtifactVisualization,
    CuratedVisualization,
    Deployment,
    Pipeline,
    PipelineRun,
    PipelineSnapshot,
    Project,
)

C = CuratedVisualization
V = ArtifactVisualization

RESOURCES: dict[VisualizationResourceTypes, Any] = {
    VisualizationResourceTypes.DEPLOYMENT: Deployment,
    VisualizationResourceTypes.PIPELINE: Pipeline,
    VisualizationResourceTypes.PIPELINE_RUN: PipelineRun,
    VisualizationResourceTypes.PIPELINE_SNAPSHOT: PipelineSnapshot,
    VisualizationResourceTypes.PROJECT: Project,
}
"""The tables of the resources a visualization is shown on (models are not kept here)."""


def _table(model: Any) -> Table:
    return model.__table__  # type: ignore[no-any-return]


_CURATED = sa_select(*rendered_columns(_table(C)))
_VISUALIZATION = sa_select(
    *rendered_columns(_table(V)), col(ArtifactVersion.project_id).label("project_id")
).join(ArtifactVersion, col(ArtifactVersion.id) == col(V.artifact_version_id))


class CuratedVisualizationRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def read(self, curated_id: uuid.UUID) -> Any | None:
        query = _CURATED.where(col(C.id) == curated_id)
        return (await core_execute(self.session, query, {})).first()

    async def visualization(self, visualization_id: uuid.UUID) -> Any | None:
        """The artifact visualization's row and its version's ``project_id``."""
        query = _VISUALIZATION.where(col(V.id) == visualization_id)
        return (await core_execute(self.session, query, {})).first()

    async def resource_project(
        self, kind: VisualizationResourceTypes, resource_id: uuid.UUID
    ) -> tuple[bool, uuid.UUID | None]:
        """Whether the resource exists, and its project (a project's is itself)."""
        model = RESOURCES.get(kind)
        if model is None:
            return False, None
        project = col(model.id) if model is Project else col(model.project_id)
        query = sa_select(project).where(col(model.id) == resource_id)
        row = (await core_execute(self.session, query, {})).first()
        return (row is not None, row[0] if row is not None else None)

    async def linked(self, visualization_id: uuid.UUID, kind: str, resource_id: uuid.UUID) -> bool:
        query = sa_select(col(C.id)).where(
            col(C.artifact_visualization_id) == visualization_id,
            col(C.resource_id) == resource_id,
            col(C.resource_type) == kind,
        )
        return (await core_execute(self.session, query.limit(1), {})).first() is not None

    async def order_taken(
        self, kind: str, resource_id: uuid.UUID, order: int, other_than: uuid.UUID | None
    ) -> bool:
        query = sa_select(col(C.id)).where(
            col(C.resource_id) == resource_id,
            col(C.resource_type) == kind,
            col(C.display_order) == order,
        )
        if other_than is not None:
            query = query.where(col(C.id) != other_than)
        return (await core_execute(self.session, query.limit(1), {})).first() is not None
