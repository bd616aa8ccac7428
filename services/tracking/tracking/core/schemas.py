"""Request and response models every tracking resource shares: the body parts of named,
project-scoped resources (their envelope is :class:`shared.envelope.NamedEnvelope`), the
request base and list scope of those resources, the common query parameters, and
``Source``."""

from __future__ import annotations

import datetime as dt
import uuid
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, WithJsonSchema

from shared.types import WireDatetime


def _aware_utc(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


InputDatetime = Annotated[
    dt.datetime,
    AfterValidator(_aware_utc),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
"""A datetime a request sends, held as aware UTC to be stored (naive values, as the
reference's clients send them, are taken as UTC)."""


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


class ScopedRequest(BaseModel):
    """``user`` is accepted and ignored (the caller's token decides); unknown keys too."""

    model_config = ConfigDict(extra="ignore")

    user: uuid.UUID | None = None
    project: uuid.UUID
    _workspace: str | None = PrivateAttr(default=None)

    def in_workspace(self, workspace: str | None) -> None:
        """Made on a deprecated ``/workspaces/{project}/...`` path: that project (a name or
        an id) wins over ``project``, as the reference's."""
        self._workspace = workspace

    def project_ref(self) -> str | uuid.UUID:
        return self._workspace or self.project


class ScopedListQuery(BaseModel):
    """The list parameters that scope rather than filter: always ANDed on."""

    project: str | None = None
    scope_user: uuid.UUID | None = None


class WorkspaceListQuery(ScopedListQuery):
    """``project_name_or_id`` (the deprecated ``/workspaces/{project}/...`` path's segment,
    or the query parameter) overrides ``project``."""

    project_name_or_id: str | None = None

    def scope(self) -> ScopedListQuery:
        return ScopedListQuery(
            project=self.project_name_or_id or self.project, scope_user=self.scope_user
        )
