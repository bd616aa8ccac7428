"""Business rules for run templates: a template is made from a snapshot built remotely for
a stack without local components (the reference's checks and messages) and names its
snapshot when visible. Templates are not run here: as the reference's server without a
workload manager, there is no ``POST /run_templates/{id}/runs`` (404)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.errors import BadRequest, NotFound
from shared.listing import Listing
from tracking.core.errors import NameTaken, ScopedNotFound
from tracking.core.repository import new_row
from tracking.core.rows import ScopedRow
from tracking.core.schemas import WorkspaceListQuery
from tracking.core.service import ScopedService
from tracking.flavor.custom import flavors_of
from tracking.models import PipelineBuild, PipelineSnapshot, RunTemplate
from tracking.run_template.repository import (
    RUN_TEMPLATES,
    TAG_RESOURCE,
    RunTemplateRepository,
    TemplateItem,
)
from tracking.run_template.schemas import RunTemplateRequest, RunTemplateUpdate
from tracking.tag.service import TagService


class RunTemplateNotFound(ScopedNotFound):
    resource = "run template"


class RunTemplateNameTaken(NameTaken):
    resource = "run template"


class NotTemplatable(BadRequest):
    """The reference's ``validate_snapshot_is_templatable`` (a ValueError there: 400)."""


class RunTemplateService(ScopedService[RunTemplate]):
    not_found = RunTemplateNotFound
    name_taken = RunTemplateNameTaken

    def __init__(self, session: AsyncSession) -> None:
        self.templates = RunTemplateRepository(session)
        super().__init__(session, self.templates)
        self.tags = TagService(session)

    async def list_page(
        self, listing: Listing, query: WorkspaceListQuery
    ) -> tuple[int, list[TemplateItem]]:
        total, rows = await self.list_rows(RUN_TEMPLATES, listing, query.scope())
        return total, await self._items(rows)

    async def get(self, template_id: uuid.UUID) -> TemplateItem:
        (item,) = await self._items([await self.read_row(template_id)])
        return item

    async def create(self, request: RunTemplateRequest, user_id: uuid.UUID) -> TemplateItem:
        """Into ``request.project_ref()`` (a workspace path's project wins)."""
        project = await self.project(request.project_ref())
        snapshot = await self.session.get(PipelineSnapshot, request.source_snapshot_id)
        if snapshot is None or snapshot.project_id != project.id:
            raise NotFound(
                f"The pipeline snapshot with ID {request.source_snapshot_id} referenced by "
                f"the run template being created was not found in the '{project.id}' project"
            )
        await self._check_templatable(snapshot)
        template = new_row(
            RunTemplate,
            project_id=project.id,
            name=request.name,
            description=request.description,
            hidden=request.hidden,
            source_snapshot_id=snapshot.id,
            user_id=user_id,
        )
        await self.insert(template, project)
        if not request.hidden:
            await self.templates.name_snapshot(snapshot.id, request.name, request.description)
        await self.tags.attach(TAG_RESOURCE, template.id, request.tags or [], user_id)
        return await self.get(template.id)

    async def _check_templatable(self, snapshot: PipelineSnapshot) -> None:
        build = None
        if snapshot.build_id is not None:
            build = await self.session.get(PipelineBuild, snapshot.build_id)
        if build is None:
            raise NotTemplatable(
                "Unable to create run template as there is no associated build. Run "
                "templates can only be created for remote orchestrators that use container "
                "images to run the pipeline."
            )
        if build.stack_id is None:
            raise NotTemplatable(
                "Unable to create run template as the associated build has no stack reference."
            )
        keys = await self.templates.stack_flavors(build.stack_id)
        flavors = await flavors_of(self.session, keys)
        for key in keys:
            flavor = flavors.get(key)
            if flavor is None:
                raise NotTemplatable(
                    "Unable to create run template as a component of the associated stack "
                    "has no flavor."
                )
            if flavor.local:
                raise NotTemplatable(
                    "Unable to create run template as the associated stack contains local "
                    "components."
                )

    async def update(
        self, template_id: uuid.UUID, update: RunTemplateUpdate, user_id: uuid.UUID
    ) -> TemplateItem:
        template = await self.get_row(template_id)
        if update.description is not None:
            template.description = update.description
        if update.hidden is not None:
            template.hidden = update.hidden
        template.updated = utcnow()
        if update.name:
            await self.rename(template, update.name)
        await self.tags.attach(TAG_RESOURCE, template.id, update.add_tags or [], user_id)
        await self.tags.detach(TAG_RESOURCE, template.id, update.remove_tags or [])
        await self.session.flush()
        return await self.get(template.id)

    async def delete(self, template_id: uuid.UUID) -> None:
        """The template and its tags; its snapshots stay, no longer naming it."""
        template = await self.delete_row(template_id)
        await self.tags.detach_all(TAG_RESOURCE, [template.id])
        await self.templates.release_snapshots(template.id)

    async def _items(self, rows: Sequence[ScopedRow]) -> list[TemplateItem]:
        """Every template's source snapshot, pipeline, build and tags, in one query each."""
        snapshots, pipelines, builds = await self.templates.related(rows)
        tags = await self.tags.for_rows(rows)
        items = []
        for row, row_tags in zip(rows, tags, strict=True):
            snapshot = snapshots.get(row.source_snapshot_id)  # type: ignore[attr-defined]
            pipeline = build = None
            if snapshot is not None:
                pipeline = pipelines.get(snapshot.pipeline_id)
                build = builds.get(snapshot.build_id)
            items.append(TemplateItem(row, snapshot, pipeline, build, row_tags))
        return items
