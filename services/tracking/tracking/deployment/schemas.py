"""Deployment request and response models in the reference's shapes."""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

from shared.envelope import NamedEnvelope
from shared.users import NestedUser
from tracking.artifact.schemas import TagName
from tracking.component.schemas import ComponentResponse
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import ProjectScopedBody, ScopedRequest
from tracking.pipeline.schemas import PipelineResponse, nested_pipeline
from tracking.pipeline_snapshot.schemas import PipelineSnapshotResponse, nested_snapshot
from tracking.stack.schemas import StackResponse
from tracking.tag.schemas import TagResponse, TagRow, TagSpec, nested_tag


class DeploymentStatus(StrEnum):
    UNKNOWN = "unknown"
    PENDING = "pending"
    RUNNING = "running"
    ABSENT = "absent"
    ERROR = "error"


class DeploymentUpdate(BaseModel):
    """What is given (and not null) is set; tags are added or taken off."""

    name: str | None = Field(default=None, max_length=255)
    snapshot_id: uuid.UUID | None = None
    url: str | None = None
    status: DeploymentStatus | None = None
    deployment_metadata: dict[str, Any] | None = None
    auth_key: str | None = None
    add_tags: list[TagName] | None = None
    remove_tags: list[str] | None = None

    def changes(self) -> dict[str, Any]:
        """The columns to set besides the name."""
        return self.model_dump(
            exclude_unset=True, exclude_none=True, exclude={"name", "add_tags", "remove_tags"}
        )


class DeploymentRequest(ScopedRequest):
    name: str = Field(max_length=255)
    snapshot_id: uuid.UUID
    deployer_id: uuid.UUID
    auth_key: str | None = None
    tags: list[TagName | TagSpec] | None = None

    def tag_names(self) -> list[str]:
        return [t if isinstance(t, str) else t.name for t in self.tags or []]


class DeploymentResponseBody(ProjectScopedBody):
    url: str | None = None
    status: DeploymentStatus | None = None


class DeploymentResponseMetadata(BaseModel):
    deployment_metadata: dict[str, Any] = Field(default_factory=dict)
    auth_key: str | None = None


class DeploymentResponseResources(BaseModel):
    user: NestedUser | None = None
    snapshot: PipelineSnapshotResponse | None = None
    deployer: ComponentResponse | None = None
    pipeline: PipelineResponse | None = None
    tags: list[TagResponse]
    visualizations: list[Any] = Field(default_factory=list)
    stack: StackResponse | None = None


class DeploymentResponse(
    NamedEnvelope[DeploymentResponseBody, DeploymentResponseMetadata, DeploymentResponseResources]
):
    pass


class DeploymentItem(NamedTuple):
    """A deployment's row with what its resources show (each nested body-only)."""

    deployment: Any
    snapshot: Any | None = None
    pipeline: Any | None = None
    deployer: ComponentResponse | None = None
    stack: StackResponse | None = None
    tags: tuple[TagRow, ...] | list[TagRow] = ()

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.deployment.user_id  # type: ignore[no-any-return]


DEPLOYMENT = EnvelopeShape(DeploymentResponse)


def deployment_response(
    item: DeploymentItem, hydrate: bool, user: NestedUser | None
) -> dict[str, Any]:
    resources: dict[str, Any] = {
        "user": user,
        "snapshot": nested_snapshot(item.snapshot) if item.snapshot is not None else None,
        "deployer": item.deployer,
        "pipeline": nested_pipeline(item.pipeline) if item.pipeline is not None else None,
        "tags": [nested_tag(t) for t in item.tags],
        "visualizations": [],
        "stack": item.stack,
    }
    return DEPLOYMENT(item.deployment, resources, hydrate=hydrate)
