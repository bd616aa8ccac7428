"""Shapes every tracking resource shares: the response envelope parts and ``Source``."""

from __future__ import annotations

import uuid
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from shared.types import WireDatetime


class SourceType(StrEnum):
    USER = "user"
    BUILTIN = "builtin"
    INTERNAL = "internal"
    DISTRIBUTION_PACKAGE = "distribution_package"
    CODE_REPOSITORY = "code_repository"
    NOTEBOOK = "notebook"
    UNKNOWN = "unknown"


class Source(BaseModel):
    """A loadable Python object; extra keys (``package_name``, ``version`` …) are kept."""

    model_config = ConfigDict(extra="allow")

    module: str
    attribute: str | None = None
    type: SourceType


class Timestamps(BaseModel):
    created: WireDatetime
    updated: WireDatetime


class UserScopedBody(Timestamps):
    user_id: uuid.UUID | None = None


class ProjectScopedBody(UserScopedBody):
    project_id: uuid.UUID


class HydrateQuery(BaseModel):
    hydrate: bool = True


class ProjectQuery(BaseModel):
    """The optional ``project_name_or_id`` query parameter of some routes."""

    project_name_or_id: str | None = Field(default=None)
