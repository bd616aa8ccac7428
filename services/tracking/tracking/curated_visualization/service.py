"""Business rules for curated visualizations, as the reference's: the resource and the
artifact visualization must exist (404), all three in one project (403); a visualization
is shown once per resource, and a display order once per resource (409)."""

from __future__ import annotations

import uuid

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.errors import Conflict, Forbidden, NotFound
from tracking.core.errors import ScopedNotFound
from tracking.curated_visualization.repository import CuratedVisualizationRepository
from tracking.curated_visualization.schemas import (
    CuratedItem,
    CuratedVisualizationRequest,
    CuratedVisualizationUpdate,
    VisualizationResourceTypes,
)
from tracking.models import CuratedVisualization

_RESOURCE_NAMES = {
    VisualizationResourceTypes.DEPLOYMENT: "deployment",
    VisualizationResourceTypes.MODEL: "model",
    VisualizationResourceTypes.PIPELINE: "pipeline",
    VisualizationResourceTypes.PIPELINE_RUN: "pipeline run",
    VisualizationResourceTypes.PIPELINE_SNAPSHOT: "pipeline snapshot",
    VisualizationResourceTypes.PROJECT: "project",
}


class CuratedVisualizationNotFound(ScopedNotFound):
    resource = "curated visualization"


class ArtifactVisualizationNotFound(ScopedNotFound):
    resource = "artifact visualization"


def _resource_not_found(kind: VisualizationResourceTypes, resource_id: uuid.UUID) -> NotFound:
    name = _RESOURCE_NAMES[kind]
    return NotFound(f"Unable to get {name} with ID '{resource_id}': No {name} with this ID found")


class CuratedVisualizationService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.curated = CuratedVisualizationRepository(session)

    async def get(self, curated_id: uuid.UUID) -> CuratedItem:
        row = await self.curated.read(curated_id)
        if row is None:
            raise CuratedVisualizationNotFound(curated_id)
        await self._resource(VisualizationResourceTypes(row.resource_type), row.resource_id)
        visualization = await self.curated.visualization(row.artifact_visualization_id)
        return CuratedItem(row, visualization)

    async def _resource(
        self, kind: VisualizationResourceTypes, resource_id: uuid.UUID
    ) -> uuid.UUID | None:
        """The resource's project (404 when it does not exist)."""
        found, project_id = await self.curated.resource_project(kind, resource_id)
        if not found:
            raise _resource_not_found(kind, resource_id)
        return project_id

    async def create(self, request: CuratedVisualizationRequest) -> CuratedItem:
        kind, resource_id = request.resource_type, request.resource_id
        resource_project = await self._resource(kind, resource_id)
        visualization = await self.curated.visualization(request.artifact_visualization_id)
        if visualization is None:
            raise ArtifactVisualizationNotFound(request.artifact_visualization_id)
        if visualization.project_id != request.project:
            raise Forbidden(
                "Curated visualizations must target the same project as the artifact visualization."
            )
        if resource_project is not None and resource_project != request.project:
            raise Forbidden(
                f"Resource {kind.value} with ID {resource_id} belongs to a different project "
                f"than the curated visualization (project ID: {request.project})."
            )
        if await self.curated.linked(visualization.id, kind.value, resource_id):
            raise Conflict(
                "A curated visualization for this resource already exists for the specified "
                "artifact visualization."
            )
        await self._check_order(kind.value, resource_id, request.display_order, None)
        curated = CuratedVisualization(
            project_id=request.project,
            artifact_visualization_id=visualization.id,
            display_name=request.display_name,
            display_order=request.display_order,
            layout_size=request.layout_size.value,
            resource_id=resource_id,
            resource_type=kind.value,
        )
        self.session.add(curated)
        await self.session.flush()
        return await self.get(curated.id)

    async def _check_order(
        self, kind: str, resource_id: uuid.UUID, order: int | None, other_than: uuid.UUID | None
    ) -> None:
        if order is not None and await self.curated.order_taken(
            kind, resource_id, order, other_than
        ):
            raise Conflict(
                "A curated visualization for this resource already uses the display order "
                f"'{order}'. Please choose a different value."
            )

    async def update(
        self, curated_id: uuid.UUID, update: CuratedVisualizationUpdate
    ) -> CuratedItem:
        await self.get(curated_id)
        curated = await self.session.get(CuratedVisualization, curated_id)
        assert curated is not None  # read just now, in this transaction
        given = update.model_fields_set
        if "display_order" in given:
            await self._check_order(
                curated.resource_type, curated.resource_id, update.display_order, curated_id
            )
            curated.display_order = update.display_order
        if "display_name" in given:
            curated.display_name = update.display_name
        if update.layout_size is not None:
            curated.layout_size = update.layout_size.value
        curated.updated = utcnow()
        await self.session.flush()
        return await self.get(curated_id)

    async def delete(self, curated_id: uuid.UUID) -> None:
        await self.get(curated_id)
        curated = await self.session.get(CuratedVisualization, curated_id)
        await self.session.delete(curated)
        await self.session.flush()
