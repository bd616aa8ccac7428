"""Resolving the project a request is about (name or id; the default when omitted)."""

from __future__ import annotations

import uuid

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.errors import NotFound
from tracking.models import Project
from tracking.project.repository import ProjectRef, ProjectRepository

DEFAULT_PROJECT = "default"


class ProjectNotFound(NotFound):
    def __init__(self, name_or_id: object) -> None:
        super().__init__(
            f"Unable to get project with name or ID '{name_or_id}': "
            "No project with this name or ID found"
        )


async def resolve_project(session: AsyncSession, name_or_id: str | uuid.UUID | None) -> Project:
    """The named project, or the default one when none is named (404 when unknown)."""
    wanted = DEFAULT_PROJECT if name_or_id is None else str(name_or_id)
    project = await ProjectRepository(session).by_name_or_id(wanted)
    if project is None:
        raise ProjectNotFound(wanted)
    return project


async def resolve_project_ref(
    session: AsyncSession, name_or_id: str | uuid.UUID | None
) -> ProjectRef:
    """:func:`resolve_project`'s id and name, without loading the row."""
    wanted = DEFAULT_PROJECT if name_or_id is None else str(name_or_id)
    project = await ProjectRepository(session).ref(wanted)
    if project is None:
        raise ProjectNotFound(wanted)
    return project
