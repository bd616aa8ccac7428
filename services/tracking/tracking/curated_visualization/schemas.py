"""Curated visualization request and response models in the reference's shapes."""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from shared.envelope import Envelope
from shared.users import NestedUser
from tracking.artifact_version.schemas import ArtifactVisualizationResponse, nested_visualization
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import ProjectScopedBody, ScopedRequest


class VisualizationResourceTypes(StrEnum):
    DEPLOYMENT = "deployment"
    MODEL = "model"
    PIPELINE = "pipeline"
    PIPELINE_RUN = "pipeline_run"
    PIPELINE_SNAPSHOT = "pipeline_snapshot"
    PROJECT = "project"


class CuratedVisualizationSize(StrEnum):
    FULL_WIDTH = "full_width"
    HALF_WIDTH = "half_width"


class CuratedVisualizationRequest(ScopedRequest):
    artifact_visualization_id: uuid.UUID
    display_name: str | None = None
    display_order: int | None = Field(default=None, ge=0, le=2**31 - 1)
    layout_size: CuratedVisualizationSize = CuratedVisualizationSize.FULL_WIDTH
    resource_id: uuid.UUID
    resource_type: VisualizationResourceTypes


class CuratedVisualizationUpdate(BaseModel):
    """Fields sent are set (``display_order: null`` clears it); a null layout is kept."""

    model_config = ConfigDict(extra="ignore")

    display_name: str | None = None
    display_order: int | None = Field(default=None, ge=0, le=2**31 - 1)
    layout_size: CuratedVisualizationSize | None = None


class CuratedVisualizationResponseBody(ProjectScopedBody):
    artifact_visualization_id: uuid.UUID
    artifact_version_id: uuid.UUID
    display_name: str | None = None
    display_order: int | None = None
    layout_size: CuratedVisualizationSize = CuratedVisualizationSize.FULL_WIDTH
    resource_id: uuid.UUID
    resource_type: VisualizationResourceTypes


class CuratedVisualizationResponseMetadata(BaseModel):
    pass


class CuratedVisualizationResponseResources(BaseModel):
    artifact_visualization: ArtifactVisualizationResponse


class CuratedVisualizationResponse(
    Envelope[
        CuratedVisualizationResponseBody,
        CuratedVisualizationResponseMetadata,
        CuratedVisualizationResponseResources,
    ]
):
    pass


class CuratedItem(NamedTuple):
    """A curated visualization's row (with its visualization's version id) and its
    artifact visualization's row. The reference records no creator."""

    curated: Any
    visualization: Any

    @property
    def user_id(self) -> uuid.UUID | None:
        return None


CURATED = EnvelopeShape(CuratedVisualizationResponse)


def curated_visualization_response(
    item: CuratedItem, hydrate: bool, user: NestedUser | None
) -> dict[str, Any]:
    """As the reference: the visualization (resources) only when hydrated."""
    resources = {"artifact_visualization": nested_visualization(item.visualization)}
    body = {"artifact_version_id": item.visualization.artifact_version_id, "user_id": None}
    envelope = CURATED(item.curated, resources, hydrate=hydrate, body=body)
    if not hydrate:
        envelope["resources"] = None
    return envelope
