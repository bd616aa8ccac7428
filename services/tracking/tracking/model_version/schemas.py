"""Model version request and response models in the reference's shapes."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated, Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared.envelope import NamedEnvelope
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import ProjectScopedBody, ScopedListQuery, ScopedRequest
from tracking.model.schemas import nested_model
from tracking.tag.schemas import TagResponse, TagRow, nested_tag

TagName = Annotated[str, Field(max_length=255)]


class ModelStages(StrEnum):
    NONE = "none"
    STAGING = "staging"
    PRODUCTION = "production"
    ARCHIVED = "archived"
    LATEST = "latest"


STAGES = frozenset(stage.value for stage in ModelStages)


class ModelVersionRequest(ScopedRequest):
    model_config = ConfigDict(extra="ignore", protected_namespaces=())

    name: str | None = Field(default=None, max_length=255)
    description: str | None = Field(default=None, max_length=65535)
    stage: str | None = Field(default=None, max_length=255)
    model: uuid.UUID
    tags: list[TagName] | None = None


class ModelVersionUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    stage: str | None = None
    force: bool = False
    name: str | None = Field(default=None, max_length=255)
    description: str | None = Field(default=None, max_length=65535)
    add_tags: list[TagName] | None = None
    remove_tags: list[str] | None = None

    @field_validator("stage")
    @classmethod
    def _known_stage(cls, stage: str | None) -> str | None:
        """The reference's check (a 422 there, as here)."""
        if stage is not None and stage not in STAGES:
            raise ValueError(f"`{stage}` is not a valid model stage.")
        return stage


class ModelVersionListQuery(ScopedListQuery):
    """``model`` (name or id) scopes the list, ANDed on whatever else filters it;
    ``model_name_or_id`` (a query parameter here too, as on the reference) wins over it."""

    model_config = ConfigDict(protected_namespaces=())

    model: str | None = None
    model_name_or_id: str | None = None


class ModelVersionResponseBody(ProjectScopedBody):
    model_config = ConfigDict(protected_namespaces=())

    stage: str | None = None
    number: int
    model: dict[str, Any]


class ModelVersionResponseMetadata(BaseModel):
    description: str | None = None
    run_metadata: dict[str, Any] = Field(default_factory=dict)


class ServicesPage(BaseModel):
    index: int = 1
    max_size: int = 5
    total_pages: int = 1
    total: int = 0
    items: list[Any] = Field(default_factory=list)


class ModelVersionResponseResources(BaseModel):
    user: NestedUser | None = None
    services: ServicesPage
    tags: list[TagResponse] = Field(default_factory=list)


class ModelVersionResponse(
    NamedEnvelope[
        ModelVersionResponseBody, ModelVersionResponseMetadata, ModelVersionResponseResources
    ]
):
    pass


class VersionItem(NamedTuple):
    """A model version's row, its model's row, its tags and (hydrated) its metadata."""

    version: Any
    model: Any
    tags: Sequence[TagRow] = ()
    run_metadata: dict[str, Any] | None = None

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.version.user_id  # type: ignore[no-any-return]


MODEL_VERSION = EnvelopeShape(ModelVersionResponse)
_NO_SERVICES = ServicesPage().model_dump()


def model_version_response(
    item: VersionItem, hydrate: bool, user: NestedUser | None
) -> dict[str, Any]:
    """Models run no services here: ``services`` is the reference's empty page."""
    resources = {
        "user": user,
        "services": _NO_SERVICES,
        "tags": [nested_tag(t) for t in item.tags],
    }
    body = {"model": nested_model(item.model)}
    metadata = {"run_metadata": item.run_metadata or {}} if hydrate else None
    return MODEL_VERSION(item.version, resources, hydrate=hydrate, body=body, metadata=metadata)


def nested_model_version(item: VersionItem | None) -> dict[str, Any] | None:
    """A version as a run or step shows it: body only."""
    if item is None:
        return None
    return MODEL_VERSION.envelope.of(
        item.version,
        body=MODEL_VERSION.body.of(item.version, model=nested_model(item.model)),
        metadata=None,
        resources=None,
    )
