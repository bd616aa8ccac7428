"""Model request and response models in the reference's shapes."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from shared.envelope import NamedEnvelope
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import ProjectScopedBody, ScopedRequest
from tracking.model.repository import TaggedModel
from tracking.tag.schemas import TagResponse, nested_tag

TagName = Annotated[str, Field(max_length=255)]
Text = Annotated[str | None, Field(default=None, max_length=65535)]


class ModelFields(BaseModel):
    license: Text = None
    description: Text = None
    audience: Text = None
    use_cases: Text = None
    limitations: Text = None
    trade_offs: Text = None
    ethics: Text = None


class ModelRequest(ScopedRequest, ModelFields):
    name: str = Field(max_length=255)
    tags: list[TagName] | None = None
    save_models_to_registry: bool = True


class ModelUpdate(ModelFields):
    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, max_length=255)
    add_tags: list[TagName] | None = None
    remove_tags: list[str] | None = None
    save_models_to_registry: bool | None = None


class ModelResponseBody(ProjectScopedBody):
    pass


class ModelResponseMetadata(ModelFields):
    save_models_to_registry: bool = True


class ModelResponseResources(BaseModel):
    user: NestedUser | None = None
    tags: list[TagResponse]
    latest_version_name: str | None = None
    latest_version_id: uuid.UUID | None = None
    visualizations: list[Any] = Field(default_factory=list)


class ModelResponse(
    NamedEnvelope[ModelResponseBody, ModelResponseMetadata, ModelResponseResources]
):
    pass


MODEL = EnvelopeShape(ModelResponse)


def model_response(item: TaggedModel, hydrate: bool, user: NestedUser | None) -> dict[str, Any]:
    """A new model (an instance, not a read row) has no versions yet."""
    row = item.model
    resources = {
        "user": user,
        "tags": [nested_tag(t) for t in item.tags],
        "latest_version_name": getattr(row, "latest_version_name", None),
        "latest_version_id": getattr(row, "latest_version_id", None),
        "visualizations": [],
    }
    return MODEL(row, resources, hydrate=hydrate)


def nested_model(row: Any) -> dict[str, Any]:
    """A model as a version's body shows it: unhydrated, without resources."""
    return MODEL.envelope.of(row, body=MODEL.body.of(row), metadata=None, resources=None)
