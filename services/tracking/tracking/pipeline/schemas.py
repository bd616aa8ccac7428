"""Pipelines: the few fields snapshots, deployments and runs refer to, in the reference's
shapes."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Annotated, Any, NamedTuple

from pydantic import BaseModel, Field

from shared.envelope import NamedEnvelope
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import ProjectScopedBody, ScopedRequest
from tracking.tag.schemas import TagRef, TagResponse, TagRow, nested_tag


class PipelineRequest(ScopedRequest):
    name: str = Field(max_length=255)
    description: str | None = None
    tags: list[TagRef] | None = None


class PipelineUpdate(BaseModel):
    """As the reference, the description is replaced whole (left out, it is cleared)."""

    description: str | None = Field(default=None, max_length=65535)
    add_tags: list[Annotated[str, Field(max_length=255)]] | None = None
    remove_tags: list[str] | None = None


class PipelineResponseBody(ProjectScopedBody):
    pass


class PipelineResponseMetadata(BaseModel):
    description: str | None = None


class PipelineResponseResources(BaseModel):
    user: NestedUser | None = None
    latest_run_user: NestedUser | None = None
    latest_run_id: uuid.UUID | None = None
    latest_run_status: str | None = None
    tags: list[TagResponse] = Field(default_factory=list)
    visualizations: list[dict[str, Any]] = Field(default_factory=list)


class PipelineResponse(
    NamedEnvelope[PipelineResponseBody, PipelineResponseMetadata, PipelineResponseResources]
):
    pass


PIPELINE = EnvelopeShape(PipelineResponse)


class PipelineItem(NamedTuple):
    """A pipeline's row with its newest run (``None`` before the first) and that run's
    creator."""

    pipeline: Any
    latest_run: Any = None
    latest_run_user: NestedUser | None = None
    tags: Sequence[TagRow] = ()

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.pipeline.user_id  # type: ignore[no-any-return]


def pipeline_response(item: PipelineItem, hydrate: bool, user: NestedUser | None) -> dict[str, Any]:
    latest = item.latest_run
    resources: dict[str, Any] = {
        "user": user,
        "latest_run_id": latest.id if latest is not None else None,
        "latest_run_status": latest.status if latest is not None else None,
        "latest_run_user": item.latest_run_user,
        "tags": [nested_tag(tag) for tag in item.tags],
        "visualizations": [],
    }
    return PIPELINE(item.pipeline, resources, hydrate=hydrate)


def nested_pipeline(row: Any) -> dict[str, Any]:
    """Body only, as nested in snapshots, runs and deployments."""
    return PIPELINE.envelope.of(row, body=PIPELINE.body.of(row), metadata=None, resources=None)
