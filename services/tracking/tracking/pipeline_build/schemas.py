"""Pipeline build request and response models in the reference's shapes."""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from shared.envelope import Envelope
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import ProjectScopedBody, ScopedRequest, WorkspaceListQuery
from tracking.pipeline.schemas import PipelineResponse, nested_pipeline
from tracking.stack.schemas import StackResponse, nested_stack


class BuildItem(BaseModel):
    """One image of a build; extra keys are kept."""

    model_config = ConfigDict(extra="allow")

    image: str
    dockerfile: str | None = None
    requirements: str | None = None
    settings_checksum: str | None = None
    contains_code: bool = True
    requires_code_download: bool = False


class PipelineBuildRequest(ScopedRequest):
    images: dict[str, BuildItem] = Field(default_factory=dict)
    is_local: bool
    contains_code: bool
    zenml_version: str | None = Field(default=None, max_length=255)
    python_version: str | None = Field(default=None, max_length=255)
    duration: int | None = None
    checksum: str | None = Field(default=None, max_length=255)
    stack_checksum: str | None = Field(default=None, max_length=255)
    stack: uuid.UUID | None = None
    pipeline: uuid.UUID | None = None


class PipelineBuildListQuery(WorkspaceListQuery):
    pass


class PipelineBuildResponseMetadata(BaseModel):
    pipeline: PipelineResponse | None = None
    stack: StackResponse | None = None
    images: dict[str, Any] = Field(default_factory=dict)
    zenml_version: str | None = None
    python_version: str | None = None
    checksum: str | None = None
    stack_checksum: str | None = None
    is_local: bool
    contains_code: bool
    duration: int | None = None


class PipelineBuildResponseResources(BaseModel):
    user: NestedUser | None = None


class PipelineBuildResponse(
    Envelope[ProjectScopedBody, PipelineBuildResponseMetadata, PipelineBuildResponseResources]
):
    pass


class BuildItemRow(NamedTuple):
    """A build's row with its pipeline and stack (rows, or ``None``)."""

    build: Any
    pipeline: Any = None
    stack: Any = None

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.build.user_id  # type: ignore[no-any-return]


PIPELINE_BUILD = EnvelopeShape(PipelineBuildResponse)


def nested_build(row: Any) -> dict[str, Any]:
    """Body only, as nested in run templates."""
    return PIPELINE_BUILD.envelope.of(
        row, body=PIPELINE_BUILD.body.of(row), metadata=None, resources=None
    )


def pipeline_build_response(
    item: BuildItemRow, hydrate: bool, user: NestedUser | None
) -> dict[str, Any]:
    metadata = None
    if hydrate:
        metadata = {
            "pipeline": nested_pipeline(item.pipeline) if item.pipeline is not None else None,
            "stack": nested_stack(item.stack) if item.stack is not None else None,
        }
    return PIPELINE_BUILD(item.build, {"user": user}, hydrate=hydrate, metadata=metadata)
