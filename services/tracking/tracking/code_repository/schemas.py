"""Code repository request and response models in the reference's shapes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shared.envelope import NamedEnvelope
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.rows import ScopedRow
from tracking.core.schemas import (
    ProjectScopedBody,
    ScopedRequest,
    Source,
    WorkspaceListQuery,
)


class CodeRepositoryRequest(ScopedRequest):
    name: str = Field(max_length=255)
    config: dict[str, Any]
    source: Source
    logo_url: str | None = None
    description: str | None = Field(default=None, max_length=65535)


class CodeRepositoryUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, max_length=255)
    config: dict[str, Any] | None = None
    source: Source | None = None
    logo_url: str | None = None
    description: str | None = Field(default=None, max_length=65535)


class CodeRepositoryListQuery(WorkspaceListQuery):
    pass


class CodeRepositoryResponseBody(ProjectScopedBody):
    source: Source
    logo_url: str | None = None


class CodeRepositoryResponseMetadata(BaseModel):
    config: dict[str, Any]
    description: str | None = None


class CodeRepositoryResponseResources(BaseModel):
    user: NestedUser | None = None


class CodeRepositoryResponse(
    NamedEnvelope[
        CodeRepositoryResponseBody,
        CodeRepositoryResponseMetadata,
        CodeRepositoryResponseResources,
    ]
):
    pass


CODE_REPOSITORY = EnvelopeShape(CodeRepositoryResponse)


def code_repository_response(
    repository: ScopedRow, hydrate: bool, user: NestedUser | None
) -> dict[str, Any]:
    return CODE_REPOSITORY(repository, {"user": user}, hydrate=hydrate)
