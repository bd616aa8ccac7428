"""A model version's links to artifact versions and runs, in the reference's shapes:
the linked resource nested in the body, body only."""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict

from shared.envelope import Envelope
from shared.types import WireDatetime


class ModelVersionArtifactRequest(BaseModel):
    """``user`` and ``project`` are accepted and ignored, as other keys."""

    model_config = ConfigDict(extra="ignore", protected_namespaces=())

    model_version: uuid.UUID
    artifact_version: uuid.UUID


class ModelVersionPipelineRunRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", protected_namespaces=())

    model_version: uuid.UUID
    pipeline_run: uuid.UUID


class LinkBody(BaseModel):
    model_config = ConfigDict(protected_namespaces=())

    created: WireDatetime
    updated: WireDatetime
    model_version: uuid.UUID


class ModelVersionArtifactResponseBody(LinkBody):
    artifact_version: dict[str, Any]


class ModelVersionPipelineRunResponseBody(LinkBody):
    pipeline_run: dict[str, Any]


class ModelVersionArtifactResponse(
    Envelope[ModelVersionArtifactResponseBody, dict[str, Any], None]
):
    pass


class ModelVersionPipelineRunResponse(
    Envelope[ModelVersionPipelineRunResponseBody, dict[str, Any], None]
):
    pass


class ArtifactLinkListQuery(BaseModel):
    """The reference's switches on the linked artifact version (not filters: always
    ANDed on)."""

    only_data_artifacts: bool = False
    only_model_artifacts: bool = False
    only_deployment_artifacts: bool = False
    has_custom_name: bool | None = None


class DeleteLinksQuery(BaseModel):
    """``only_links=false`` deletes the linked artifact versions too."""

    only_links: bool = True


class LinkItem(NamedTuple):
    """A link's row and the linked resource rendered (body only)."""

    link: Any
    target: dict[str, Any] | None
    field: str

    @property
    def user_id(self) -> uuid.UUID | None:
        return None


def link_response(item: LinkItem, hydrate: bool, user: object) -> dict[str, Any]:
    """As the reference's: ``metadata`` is ``{}`` hydrated (a new link is)."""
    link = item.link
    return {
        "body": {
            "created": link.created,
            "updated": link.updated,
            "model_version": link.model_version_id,
            item.field: item.target,
        },
        "metadata": {} if hydrate else None,
        "resources": None,
        "id": link.id,
        "permission_denied": False,
    }
