from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Any, Protocol

from pydantic import BaseModel
from sqlalchemy import Row

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
