"""Business rules for projects: unique names, and the default project stays."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import flush_unique, utcnow
from shared.errors import Conflict, Forbidden
from shared.listing import Listing
from tracking.models import Project
from tracking.project.repository import ProjectRepository
from tracking.project.schemas import ProjectRequest, ProjectStatistics, ProjectUpdate
from tracking.project.scope import DEFAULT_PROJECT, resolve_project


class ProjectAlreadyExists(Conflict):
    def __init__(self, name: str, action: str = "create") -> None:
        super().__init__(
            f"Unable to {action} the requested project with name '{name}': "
            "Found another existing project with the same name."
        )


class ProjectNotEmpty(Forbidden):
    def __init__(self, name: str, contents: dict[str, int]) -> None:
        listed = ", ".join(f"{count} {table}" for table, count in sorted(contents.items()))
        super().__init__(
            f"The project '{name}' still holds {listed}; delete them before the project."
        )


def copy_given(row: object, update: BaseModel, fields: Iterable[str]) -> None:
    """Set each of ``fields`` that the update gives (``null`` leaves a field as it is)."""
    for field in fields:
        value = getattr(update, field)
        if value is not None:
            setattr(row, field, value)


class ProjectService:
    def __init__(self, session: AsyncSession) -> None:
        self.repository = ProjectRepository(session)

    async def get(self, name_or_id: str) -> Project:
        return await resolve_project(self.repository.session, name_or_id)

    async def statistics(self, name_or_id: str) -> ProjectStatistics:
        project = await self.get(name_or_id)
        pipelines, runs = await self.repository.statistics(project.id)
        return ProjectStatistics(pipelines=pipelines, runs=runs)

    async def list_page(self, listing: Listing) -> tuple[int, list[Project]]:
        return await self.repository.page(listing)

    async def create(self, request: ProjectRequest) -> Project:
        project = Project(
            name=request.name,
            display_name=request.display_name,
            description=request.description,
            project_metadata=request.project_metadata or {},
        )
        self.repository.add(project)
        await flush_unique(self.repository.session, ProjectAlreadyExists(project.name))
        return project

    async def update(self, project: Project, update: ProjectUpdate) -> Project:
        if update.name not in (None, project.name) and project.name == DEFAULT_PROJECT:
            raise Forbidden("The name of the default project cannot be changed.")
        copy_given(project, update, ("name", "display_name", "description", "project_metadata"))
        project.updated = utcnow()
        self.repository.add(project)
        await flush_unique(self.repository.session, ProjectAlreadyExists(project.name, "update"))
        return project

    async def delete(self, project: Project) -> None:
        """The default project always exists; another one only goes once it is empty (the
        reference deletes its contents with it, artifact records included, and leaves the
        stored artifact data without an owner)."""
        if project.name == DEFAULT_PROJECT:
            raise Forbidden("The default project cannot be deleted.")
        contents = await self.repository.contents(project)
        if contents:
            raise ProjectNotEmpty(project.name, contents)
        await self.repository.delete(project)
        await self.repository.session.flush()
