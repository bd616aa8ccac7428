"""Artifact version request and response models in the reference's shapes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Annotated, Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.envelope import Envelope
from shared.shapes import Shape
from shared.types import WireDatetime
from shared.users import NestedUser
from tracking.artifact.schemas import ARTIFACT, ArtifactResponse, TagName
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import ProjectScopedBody, ScopedRequest, Source
from tracking.tag.schemas import TagResponse, TagRow, nested_tag


class ArtifactType(StrEnum):
    DATA_ANALYSIS = "DataAnalysisArtifact"
    DATA = "DataArtifact"
    MODEL = "ModelArtifact"
    SCHEMA = "SchemaArtifact"
    SERVICE = "ServiceArtifact"
    STATISTICS = "StatisticsArtifact"
    BASE = "BaseArtifact"


class ArtifactSaveType(StrEnum):
    STEP_OUTPUT = "step_output"
    MANUAL = "manual"
    PREEXISTING = "preexisting"
    EXTERNAL = "external"


class VisualizationType(StrEnum):
    CSV = "csv"
    HTML = "html"
    IMAGE = "image"
    MARKDOWN = "markdown"
    JSON = "json"


MetadataValue = str | int | float | bool | dict[str, Any] | list[Any] | None


class ArtifactVisualizationRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: VisualizationType
    uri: str = Field(max_length=65535)


class ArtifactVersionRequest(ScopedRequest):
    artifact_id: uuid.UUID | None = None
    artifact_name: str | None = Field(default=None, max_length=255)
    version: int | Annotated[str, Field(max_length=254)] | None = None
    has_custom_name: bool = False
    type: ArtifactType
    artifact_store_id: uuid.UUID | None = None
    uri: str = Field(max_length=65535)
    materializer: Source
    data_type: Source
    content_hash: str | None = Field(default=None, max_length=255)
    tags: list[TagName] | None = None
    visualizations: list[ArtifactVisualizationRequest] | None = None
    save_type: ArtifactSaveType
    metadata: dict[Annotated[str, Field(max_length=255)], MetadataValue] | None = None
    item_count: int | None = None

    @model_validator(mode="after")
    def _one_artifact(self) -> ArtifactVersionRequest:
        if self.artifact_id is None and self.artifact_name is None:
            raise ValueError("Either artifact_name or artifact_id must be set.")
        if self.artifact_id is not None and self.artifact_name is not None:
            raise ValueError("Only one of artifact_name and artifact_id can be set.")
        return self


class ArtifactVersionUpdate(BaseModel):
    """``name`` renames the version (its ``version`` string): the reference accepts it and
    ignores it, a defect. An empty one renames nothing, as an artifact's."""

    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, max_length=254)
    add_tags: list[TagName] | None = None
    remove_tags: list[str] | None = None


class ArtifactVersionResponseBody(ProjectScopedBody):
    artifact: ArtifactResponse
    version: str
    uri: str
    type: ArtifactType
    materializer: Source
    data_type: Source
    save_type: ArtifactSaveType
    artifact_store_id: uuid.UUID | None = None
    content_hash: str | None = None
    item_count: int | None = None


class ArtifactVisualizationResponseBody(BaseModel):
    created: WireDatetime
    updated: WireDatetime
    type: VisualizationType
    uri: str


class ArtifactVisualizationResponse(Envelope[ArtifactVisualizationResponseBody, None, None]):
    pass


class ArtifactVersionResponseMetadata(BaseModel):
    visualizations: list[ArtifactVisualizationResponse] | None = None
    run_metadata: dict[str, MetadataValue] = Field(default_factory=dict)


class ArtifactVersionResponseResources(BaseModel):
    user: NestedUser | None = None
    tags: list[TagResponse]
    producer_step_run_id: uuid.UUID | None = None
    producer_pipeline_run_id: uuid.UUID | None = None


class ArtifactVersionResponse(
    Envelope[
        ArtifactVersionResponseBody,
        ArtifactVersionResponseMetadata,
        ArtifactVersionResponseResources,
    ]
):
    """No ``name``: versions are named by their artifact and ``version``."""


class LoadedVisualization(BaseModel):
    type: VisualizationType
    value: str


class VersionItem(NamedTuple):
    """A version's row (with its producer's ids, see the repository) and what its response
    needs from other tables."""

    version: Any
    artifact: Any
    tags: Sequence[TagRow] = ()
    visualizations: Sequence[Any] = ()
    run_metadata: dict[str, Any] | None = None
    memo: dict[tuple[str, Any], Any] | None = None
    """Shared by the items rendered together (a page): what they have in common (their
    artifact, their sources, their tags) is rendered once. The parts are never changed
    after rendering, so one object can appear in several items."""

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.version.user_id  # type: ignore[no-any-return]


VERSION = EnvelopeShape(ArtifactVersionResponse)
_VISUALIZATION = Shape(ArtifactVisualizationResponse)
_VISUALIZATION_BODY = Shape(ArtifactVisualizationResponseBody)


def nested_visualization(row: Any) -> dict[str, Any]:
    return _VISUALIZATION.of(row, body=_VISUALIZATION_BODY.of(row))


def nested_artifact(row: Any) -> dict[str, Any]:
    """The version's artifact, body only."""
    return ARTIFACT.envelope.of(row, body=ARTIFACT.body.of(row), metadata=None, resources=None)


_NOT_FOUND = object()


def _memoized(
    memo: dict[tuple[str, Any], Any], kind: str, key: Any, build: Callable[[Any], Any], value: Any
) -> Any:
    """``build(value)``, once per ``(kind, key)`` in ``memo``."""
    found = memo.get((kind, key), _NOT_FOUND)
    if found is _NOT_FOUND:
        found = memo[(kind, key)] = build(value)
    return found


def version_response(item: VersionItem, hydrate: bool, user: NestedUser | None) -> dict[str, Any]:
    row = item.version
    memo = item.memo if item.memo is not None else {}
    resources = {
        "user": user,
        "tags": [_memoized(memo, "tag", t.id, nested_tag, t) for t in item.tags],
        "producer_step_run_id": row.producer_step_run_id,
        "producer_pipeline_run_id": row.producer_pipeline_run_id,
    }
    body = {
        "artifact": _memoized(memo, "artifact", row.artifact_id, nested_artifact, item.artifact),
        "materializer": _memoized(memo, "json", row.materializer, json.loads, row.materializer),
        "data_type": _memoized(memo, "json", row.data_type, json.loads, row.data_type),
    }
    metadata = None
    if hydrate:
        metadata = {
            "visualizations": [nested_visualization(v) for v in item.visualizations],
            "run_metadata": item.run_metadata or {},
        }
    return VERSION(row, resources, hydrate=hydrate, body=body, metadata=metadata)
