from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import Row

from shared.envelope import Envelope, NamedEnvelope
from shared.shapes import Shape
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import Timestamps, UserScopedBody


class ColorVariants(StrEnum):
    GREY = "grey"
    PURPLE = "purple"
    RED = "red"
    GREEN = "green"
    YELLOW = "yellow"
    ORANGE = "orange"
    LIME = "lime"
    TEAL = "teal"
    TURQUOISE = "turquoise"
    MAGENTA = "magenta"
    BLUE = "blue"


class TaggableResourceTypes(StrEnum):
    ARTIFACT = "artifact"
    ARTIFACT_VERSION = "artifact_version"
    MODEL = "model"
    MODEL_VERSION = "model_version"
    PIPELINE = "pipeline"
    PIPELINE_RUN = "pipeline_run"
    RUN_TEMPLATE = "run_template"
    PIPELINE_SNAPSHOT = "pipeline_snapshot"
    DEPLOYMENT = "deployment"


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _tag_name(value: str) -> str:
    """A tag's name is not a UUID: a tag is named by its name or its id."""
    if _is_uuid(value):
        raise ValueError("Tag names cannot be UUIDs or strings that can be converted to UUIDs.")
    return value


class TagRequest(BaseModel):
    """``user`` is accepted and ignored (the caller's token decides). Without ``color``,
    the name decides it (:func:`~tracking.tag.service.tag_color`)."""

    model_config = ConfigDict(extra="ignore")

    user: uuid.UUID | None = None
    name: str = Field(min_length=1, max_length=255)
    exclusive: bool = False
    color: ColorVariants | None = None

    _name = field_validator("name")(_tag_name)


class TagSpec(BaseModel):
    """A tag as a pipeline's configuration names it (the client's ``Tag``): a tag it
    introduces takes its ``color`` and ``exclusive``; ``cascade`` (the client tags a
    step's outputs with it) is accepted and not applied here."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1, max_length=255)
    color: ColorVariants | None = None
    exclusive: bool | None = None
    cascade: bool | None = None


TagRef = Annotated[str, Field(max_length=255)] | TagSpec
"""A tag in a run's, pipeline's or snapshot's request: a name or a :class:`TagSpec`."""


class TagUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, min_length=1, max_length=255)
    exclusive: bool | None = None
    color: ColorVariants | None = None

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str | None) -> str | None:
        return None if value is None else _tag_name(value)


class TagListQuery(BaseModel):
    """``scope_user``: only this user's tags, ANDed on whatever the filters."""

    scope_user: uuid.UUID | None = None


class TagResourceRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    tag_id: uuid.UUID
    resource_id: uuid.UUID
    resource_type: TaggableResourceTypes


class TagResourceResponseBody(Timestamps):
    tag_id: uuid.UUID
    resource_id: uuid.UUID
    resource_type: TaggableResourceTypes


class TagResourceResponseResources(BaseModel):
    pass


class TagResourceResponse(
    Envelope[TagResourceResponseBody, dict[str, Any], TagResourceResponseResources]
):
    pass


class TagRow(Protocol):
    """A tag's columns: a :class:`~tracking.models.Tag` or a row selecting them."""

    id: uuid.UUID
    name: str


class TagResponseBody(UserScopedBody):
    color: ColorVariants
    exclusive: bool


class TagResponseMetadata(BaseModel):
    tagged_count: int


class TagResponseResources(BaseModel):
    user: NestedUser | None = None


class TagResponse(NamedEnvelope[TagResponseBody, TagResponseMetadata, TagResponseResources]):
    pass


_TAG = Shape(TagResponse)
_TAG_BODY = Shape(TagResponseBody)
TAG = EnvelopeShape(TagResponse)


def tag_response(tag: Any, hydrate: bool, user: NestedUser | None) -> dict[str, Any]:
    """A tag read with its ``tagged_count`` (:meth:`TagRepository.read`)."""
    return TAG(tag, {"user": user}, hydrate=hydrate)


_NESTED: dict[int, tuple[TagRow, dict[str, Any]]] = {}
_NESTED_KEPT = 1024


def nested_tag(tag: TagRow) -> dict[str, Any]:
    """A tag as nested in another resource: body only (a :class:`TagResponse` dict).

    A page shares a few tags among its items (:meth:`TagService.for_rows` gives each tag
    once): the dict is built once per tag row and reused while that row lives (the entry
    holds it, so its id is not reused meanwhile). Only read rows (immutable) are kept, not
    ORM instances; the dicts are only ever serialized."""
    if not isinstance(tag, Row):
        return _TAG.of(tag, body=_TAG_BODY.of(tag))
    kept = _NESTED.get(id(tag))
    if kept is not None and kept[0] is tag:
        return kept[1]
    if len(_NESTED) >= _NESTED_KEPT:
        _NESTED.clear()
    built = _TAG.of(tag, body=_TAG_BODY.of(tag))
    _NESTED[id(tag)] = (tag, built)
    return built


def link_id(tag_id: uuid.UUID, resource_type: str, resource_id: uuid.UUID) -> uuid.UUID:
    """A tag link's id: the link is its three columns, so its id follows from them."""
    return uuid.uuid5(tag_id, f"{resource_type}:{resource_id}")


def tag_resource_response(link: Any) -> dict[str, Any]:
    """A tag link (a :class:`~tracking.models.TagResource`), unhydrated as the reference
    answers it."""
    body = TagResourceResponseBody(
        created=link.created,
        updated=link.created,
        tag_id=link.tag_id,
        resource_id=link.resource_id,
        resource_type=TaggableResourceTypes(link.resource_type),
    )
    return TagResourceResponse(
        body=body, id=link_id(link.tag_id, link.resource_type, link.resource_id)
    ).model_dump(mode="json")
