from __future__ import annotations

import uuid
from enum import StrEnum

from pydantic import BaseModel

from tracking.core.schemas import UserScopedBody
from tracking.models import Tag


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


def nested_tag(tag: Tag) -> TagResponse:
    """A tag as nested in another resource: body only."""
    return TagResponse(
        id=tag.id,
        name=tag.name,
        body=TagResponseBody(
            created=tag.created,
            updated=tag.updated,
            user_id=tag.user_id,
            color=ColorVariants(tag.color),
            exclusive=tag.exclusive,
        ),
    )
