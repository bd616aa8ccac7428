"""Business rules for pipelines: a pipeline's name is unique in its project, and it goes
with its snapshots and runs."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.listing import Listing
from tracking.core.errors import NameTaken, ScopedNotFound
from tracking.core.rows import ScopedRow
from tracking.core.schemas import ScopedListQuery
from tracking.core.service import ScopedService
from tracking.models import Pipeline
from tracking.pipeline.repository import PIPELINES, PipelineRepository
from tracking.pipeline.schemas import PipelineItem, PipelineRequest, PipelineUpdate
from tracking.run_metadata.repository import RunMetadataRepository
from tracking.tag.schemas import TaggableResourceTypes
from tracking.tag.service import TagService

TAG_RESOURCE = TaggableResourceTypes.PIPELINE.value
SNAPSHOT_TAG_RESOURCE = TaggableResourceTypes.PIPELINE_SNAPSHOT.value
RUN_TAG_RESOURCE = TaggableResourceTypes.PIPELINE_RUN.value


class PipelineNotFound(ScopedNotFound):
    resource = "pipeline"


class PipelineAlreadyExists(NameTaken):
    resource = "pipeline"


class PipelineService(ScopedService[Pipeline]):
    not_found = PipelineNotFound
    name_taken = PipelineAlreadyExists

    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, PipelineRepository(session))
        self.pipelines = PipelineRepository(session)
        self.tags = TagService(session)

    async def list_page(
        self, listing: Listing, query: ScopedListQuery
    ) -> tuple[int, list[PipelineItem]]:
        total, rows = await self.list_rows(PIPELINES, listing, query)
        return total, await self._items(rows)

    async def get(self, pipeline_id: uuid.UUID) -> PipelineItem:
        (item,) = await self._items([await self.read_row(pipeline_id)])
        return item

    async def _items(self, rows: Sequence[Any]) -> list[PipelineItem]:
        ids = [row.id for row in rows]
        latest = await self.pipelines.latest_runs(ids)
        tags = await self.tags.for_resources(TAG_RESOURCE, ids)
        return [PipelineItem(row, latest.get(row.id), tags=tags.get(row.id, ())) for row in rows]

    async def delete(self, pipeline_id: uuid.UUID) -> None:
        """The pipeline with its snapshots and runs (and their steps), whose tags and
        metadata go with them."""
        snapshot_ids, run_ids = await self.pipelines.dependents(pipeline_id)
        await self.tags.detach_all(TAG_RESOURCE, [pipeline_id])
        await self.tags.detach_all(SNAPSHOT_TAG_RESOURCE, snapshot_ids)
        await self.tags.detach_all(RUN_TAG_RESOURCE, run_ids)
        await RunMetadataRepository(self.session).delete_of_runs(run_ids)
        await self.delete_row(pipeline_id)

    async def create(self, request: PipelineRequest, user_id: uuid.UUID) -> PipelineItem:
        project = await self.project(request.project_ref())
        pipeline = Pipeline(
            project_id=project.id,
            name=request.name,
            description=request.description,
            user_id=user_id,
        )
        await self.insert(pipeline, project)
        await self.tags.attach(TAG_RESOURCE, pipeline.id, request.tags or [], user_id)
        tags = await self.tags.for_resources(TAG_RESOURCE, [pipeline.id])
        return PipelineItem(pipeline, tags=tags.get(pipeline.id, ()))

    async def update(
        self, pipeline_id: uuid.UUID, update: PipelineUpdate, user_id: uuid.UUID
    ) -> PipelineItem:
        pipeline = await self.get_row(pipeline_id)
        pipeline.description = update.description
        pipeline.updated = utcnow()
        await self.tags.attach(TAG_RESOURCE, pipeline.id, update.add_tags or [], user_id)
        await self.tags.detach(TAG_RESOURCE, pipeline.id, update.remove_tags or [])
        await self.session.flush()
        return await self.get(pipeline.id)

    async def in_project(self, pipeline_id: uuid.UUID, project_id: uuid.UUID) -> ScopedRow:
        """The pipeline, which must be in ``project_id`` (404 otherwise)."""
        pipeline = await self.repository.read(pipeline_id)
        if pipeline is None or pipeline.project_id != project_id:
            raise PipelineNotFound(pipeline_id)
        return pipeline
