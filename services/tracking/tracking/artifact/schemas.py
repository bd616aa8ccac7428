"""Artifact request and response models in the reference's shapes."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from shared.envelope import NamedEnvelope
from shared.users import NestedUser
from tracking.artifact.repository import TaggedArtifact
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import ProjectScopedBody, ScopedRequest
from tracking.tag.schemas import TagResponse, nested_tag

# Tags are stored in a 255-character column: longer names are a 422, not a 500.
TagName = Annotated[str, Field(max_length=255)]


class ArtifactRequest(ScopedRequest):
    """The name's characters are checked by the service (400, as the reference)."""

    name: str = Field(max_length=255)
    has_custom_name: bool = False
    tags: list[TagName] | None = None


class ArtifactUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, max_length=255)
    add_tags: list[TagName] | None = None
    remove_tags: list[str] | None = None
    has_custom_name: bool | None = None


class ArtifactResponseBody(ProjectScopedBody):
    pass


class ArtifactResponseMetadata(BaseModel):
    has_custom_name: bool = False


class ArtifactResponseResources(BaseModel):
    user: NestedUser | None = None
    tags: list[TagResponse]
    latest_version_name: str | None = None
    latest_version_id: uuid.UUID | None = None


class ArtifactResponse(
    NamedEnvelope[ArtifactResponseBody, ArtifactResponseMetadata, ArtifactResponseResources]
):
    pass


ARTIFACT = EnvelopeShape(ArtifactResponse)


def artifact_response(
    item: TaggedArtifact, hydrate: bool, user: NestedUser | None
) -> dict[str, Any]:
    """A new artifact (an instance, not a read row) has no versions yet."""
    row = item.artifact
    resources = {
        "user": user,
        "tags": [nested_tag(t) for t in item.tags],
        "latest_version_name": getattr(row, "latest_version_name", None),
        "latest_version_id": getattr(row, "latest_version_id", None),
    }
    return ARTIFACT(item.artifact, resources, hydrate=hydrate)
