from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Any, Protocol

from pydantic import BaseModel

from shared.shapes import Shape
from tracking.core.schemas import UserScopedBody


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


class TagRow(Protocol):
    """A tag's columns: a :class:`~tracking.models.Tag` or a row selecting them."""

    id: uuid.UUID
    name: str


class TagResponseBody(UserScopedBody):
    color: ColorVariants
    exclusive: bool


class TagResponseMetadata(BaseModel):
    tagged_count: int


class TagResponse(BaseModel):
    body: TagResponseBody | None = None
    metadata: TagResponseMetadata | None = None
    resources: None = None
    id: uuid.UUID
    permission_denied: bool = False
    name: str


_TAG = Shape(TagResponse)
_TAG_BODY = Shape(TagResponseBody)


def nested_tag(tag: TagRow) -> dict[str, Any]:
    """A tag as nested in another resource: body only (a :class:`TagResponse` dict)."""
    return _TAG.of(tag, body=_TAG_BODY.of(tag))
