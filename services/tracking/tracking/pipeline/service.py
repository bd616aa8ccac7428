"""Business rules for pipelines and snapshots: a snapshot's pipeline and stack exist, and
its pipeline is in its project."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import new_id, utcnow
from shared.errors import NotFound
from shared.listing import Listing
from tracking.core.errors import NameTaken, ScopedNotFound
from tracking.core.repository import ScopedRow
from tracking.core.schemas import ScopedListQuery
from tracking.core.service import ScopedService
from tracking.models import Pipeline, PipelineBuild, Schedule, Stack
from tracking.pipeline.repository import PIPELINES, PipelineRepository, SnapshotRepository
from tracking.pipeline.schemas import PipelineItem, PipelineRequest, PipelineSnapshotRequest
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


class SnapshotNotFound(NotFound):
    def __init__(self, snapshot_id: object) -> None:
        super().__init__(
            f"Unable to get pipeline snapshot with ID '{snapshot_id}': "
            "No pipeline snapshot with this ID found"
        )


class Snapshot(NamedTuple):
    """A snapshot's row with its pipeline's and its stack's (``None`` once deleted)."""

    snapshot: Any
    pipeline: Any
    stack: Any = None
    tags: Sequence[Any] = ()

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.snapshot.user_id  # type: ignore[no-any-return]


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
        project = await self.project(request.project)
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

    async def in_project(self, pipeline_id: uuid.UUID, project_id: uuid.UUID) -> ScopedRow:
        """The pipeline, which must be in ``project_id`` (404 otherwise)."""
        pipeline = await self.repository.read(pipeline_id)
        if pipeline is None or pipeline.project_id != project_id:
            raise PipelineNotFound(pipeline_id)
        return pipeline


class SnapshotService:
    def __init__(self, session: AsyncSession) -> None:
        self.pipelines = PipelineService(session)
        self.snapshots = SnapshotRepository(session)
        self.tags = self.pipelines.tags

    async def get(self, snapshot_id: uuid.UUID) -> Snapshot:
        snapshot = await self.snapshots.read(snapshot_id)
        if snapshot is None:
            raise SnapshotNotFound(snapshot_id)
        pipeline = await self.pipelines.read_row(snapshot.pipeline_id)
        stack = None
        if snapshot.stack_id is not None:
            stack = await self.snapshots.session.get(Stack, snapshot.stack_id)
        tags = await self.tags.for_resources(SNAPSHOT_TAG_RESOURCE, [snapshot_id])
        return Snapshot(snapshot, pipeline, stack, tags.get(snapshot_id, ()))

    async def create(self, request: PipelineSnapshotRequest, user_id: uuid.UUID) -> Snapshot:
        project = await self.pipelines.project(request.project)
        await self.pipelines.in_project(request.pipeline, project.id)
        for model, wanted, what in (
            (Stack, request.stack, "stack"),
            (PipelineBuild, request.build, "pipeline build"),
            (Schedule, request.schedule, "schedule"),
        ):
            if wanted is not None and await self.snapshots.session.get(model, wanted) is None:
                raise NotFound(
                    f"Unable to get {what} with ID '{wanted}': No {what} with this ID found"
                )
        now = utcnow()
        snapshot_id = new_id()
        await self.snapshots.insert(
            {
                "id": snapshot_id,
                "project_id": project.id,
                "name": request.name,
                "description": request.description,
                "source_code": request.source_code,
                "run_name_template": request.run_name_template,
                "pipeline_configuration": request.pipeline_configuration,
                "step_configurations": request.step_configurations,
                "client_environment": request.client_environment,
                "client_version": request.client_version,
                "server_version": request.server_version,
                "pipeline_version_hash": request.pipeline_version_hash,
                "pipeline_spec": request.pipeline_spec,
                "code_path": request.code_path,
                "build_id": request.build,
                "schedule_id": request.schedule,
                "template_id": request.template,
                "source_snapshot_id": request.source_snapshot,
                "is_dynamic": request.is_dynamic,
                # Nothing here builds images or runs pipelines from the server; a
                # snapshot is deployable, as in the reference, once it has a build.
                "runnable": False,
                "deployable": request.build is not None,
                "pipeline_id": request.pipeline,
                "stack_id": request.stack,
                "user_id": user_id,
                "created": now,
                "updated": now,
            }
        )
        names = request.tags or []
        await self.tags.attach(SNAPSHOT_TAG_RESOURCE, snapshot_id, names, user_id)
        return await self.get(snapshot_id)

    async def delete(self, snapshot_id: uuid.UUID) -> None:
        """The snapshot and its tags (its runs stay, without it)."""
        await self.get(snapshot_id)
        await self.tags.detach_all(SNAPSHOT_TAG_RESOURCE, [snapshot_id])
        await self.snapshots.delete(snapshot_id)
