"""Project request and response models in the reference's shapes."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.envelope import NamedEnvelope
from tracking.core.schemas import Timestamps
from tracking.models import Project
from tracking.project.repository import PROJECTS

NAME_PATTERN = r"^[a-z0-9_-]+$"
_NOT_IN_NAME = re.compile(r"[^a-z0-9_-]")


class ProjectRequest(BaseModel):
    """A missing ``name`` is derived from ``display_name`` and a missing ``display_name``
    is the name, as the reference does."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1, max_length=50, pattern=NAME_PATTERN)
    display_name: str = Field(default="", max_length=255)
    description: str = Field(default="", max_length=255)
    project_metadata: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _names(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        # Only a name or display name left out or empty is filled in: one of another type
        # (null too: the document types both strings) stays for validation to refuse.
        name, display_name = data.get("name", ""), data.get("display_name", "")
        if name == "" and isinstance(display_name, str) and display_name:
            name = _NOT_IN_NAME.sub("", display_name.lower().replace(" ", "-"))
        if display_name == "":
            display_name = name if isinstance(name, str) else ""
        return {**data, "name": name, "display_name": display_name}


class ProjectUpdate(BaseModel):
    """Every field optional; ``null`` leaves a field as it is."""

    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, min_length=1, max_length=50, pattern=NAME_PATTERN)
    display_name: str | None = Field(default=None, max_length=255)
    description: str | None = Field(default=None, max_length=255)
    project_metadata: dict[str, Any] | None = None


class ProjectResponseBody(Timestamps):
    display_name: str


class ProjectResponseMetadata(BaseModel):
    description: str = ""
    project_metadata: dict[str, Any] = Field(default_factory=dict)


class ProjectResponseResources(BaseModel):
    model_config = ConfigDict(extra="allow")


class ProjectResponse(
    NamedEnvelope[ProjectResponseBody, ProjectResponseMetadata, ProjectResponseResources]
):
    name: str = Field(max_length=50)


ProjectListQuery = PROJECTS.query_model()


def project_response(project: Project, *, hydrate: bool) -> ProjectResponse:
    return ProjectResponse(
        id=project.id,
        name=project.name,
        body=ProjectResponseBody(
            created=project.created,
            updated=project.updated,
            display_name=project.display_name,
        ),
        metadata=ProjectResponseMetadata(
            description=project.description,
            project_metadata=project.project_metadata,
        )
        if hydrate
        else None,
        resources=ProjectResponseResources(),
    )


class ProjectStatistics(BaseModel):
    """What the dashboard's home page counts."""

    pipelines: int
    runs: int
