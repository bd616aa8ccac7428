"""Business rules for snapshots: a snapshot's pipeline and stack exist, and its pipeline
is in its project. And a snapshot's code, as the dashboard offers it for download
(:class:`SnapshotCodeService`): the archive the client uploaded to the snapshot's
stack's artifact store (``code_path``), read from that store within its confinement rules
and at most ``download_size_limit`` bytes."""

from __future__ import annotations

import uuid
from typing import NamedTuple

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import new_id, utcnow
from shared.errors import BadRequest, Conflict, Forbidden, NotFound
from shared.listing import Listing
from tracking.artifact.service import check_name
from tracking.models import PipelineBuild, Schedule, Stack
from tracking.pipeline.service import SNAPSHOT_TAG_RESOURCE, PipelineService
from tracking.pipeline_snapshot.repository import SnapshotRepository, SnapshotStoreRepository
from tracking.pipeline_snapshot.schemas import (
    PipelineSnapshotRequest,
    PipelineSnapshotUpdate,
    Snapshot,
    SnapshotListQuery,
)
from tracking.store import ArtifactStores
from tracking.store.base import ArtifactStore, Entry


class SnapshotNotFound(NotFound):
    def __init__(self, snapshot_id: object) -> None:
        super().__init__(
            f"Unable to get pipeline snapshot with ID '{snapshot_id}': "
            "No pipeline snapshot with this ID found"
        )


class SnapshotNameTaken(Conflict):
    def __init__(self, name: str, pipeline_id: object) -> None:
        super().__init__(
            f"Snapshot with name `{name}` already exists for pipeline {pipeline_id}. If you "
            "want to replace the existing snapshot, set the `replace` flag to `True`."
        )


class SnapshotService:
    def __init__(self, session: AsyncSession) -> None:
        self.pipelines = PipelineService(session)
        self.snapshots = SnapshotRepository(session)
        self.tags = self.pipelines.tags

    async def list_page(
        self, listing: Listing, query: SnapshotListQuery
    ) -> tuple[int, list[Snapshot]]:
        """The page's snapshots, each with its pipeline, stack and tags."""
        project = await self.pipelines.project(query.project_name_or_id or query.project)
        total, rows = await self.snapshots.page(listing, project.id, query.scope_user)
        pipelines, stacks = await self.snapshots.pipelines_and_stacks(rows)
        tags = await self.tags.for_resources(SNAPSHOT_TAG_RESOURCE, [row.id for row in rows])
        return total, [
            Snapshot(
                row, pipelines.get(row.pipeline_id), stacks.get(row.stack_id), tags.get(row.id, ())
            )
            for row in rows
        ]

    async def get(self, snapshot_id: uuid.UUID) -> Snapshot:
        snapshot = await self.snapshots.read(snapshot_id)
        if snapshot is None:
            raise SnapshotNotFound(snapshot_id)
        pipeline = await self.pipelines.read_row(snapshot.pipeline_id)
        stack = None
        if snapshot.stack_id is not None:
            stack = await self.snapshots.stack(snapshot.stack_id)
        tags = await self.tags.for_resources(SNAPSHOT_TAG_RESOURCE, [snapshot_id])
        return Snapshot(snapshot, pipeline, stack, tags.get(snapshot_id, ()))

    async def create(self, request: PipelineSnapshotRequest, user_id: uuid.UUID) -> Snapshot:
        project = await self.pipelines.project(request.project_ref())
        await self.pipelines.in_project(request.pipeline, project.id)
        for model, wanted, what in (
            (Stack, request.stack, "stack"),
            (PipelineBuild, request.build, "pipeline build"),
            (Schedule, request.schedule, "schedule"),
        ):
            if wanted is not None and not await self.snapshots.exists(model, wanted):
                raise NotFound(
                    f"Unable to get {what} with ID '{wanted}': No {what} with this ID found"
                )
        now = utcnow()
        snapshot_id = new_id()
        await self.snapshots.insert(
            {
                "id": snapshot_id,
                "project_id": project.id,
                "name": request.given_name(),
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

    async def update(
        self, snapshot_id: uuid.UUID, update: PipelineSnapshotUpdate, user_id: uuid.UUID
    ) -> Snapshot:
        """As the reference: a name is the pipeline's snapshot's alone (``replace`` takes it
        from the one that has it), and a snapshot left without one is no trigger's target."""
        snapshot = await self.snapshots.read(snapshot_id)
        if snapshot is None:
            raise SnapshotNotFound(snapshot_id)
        values: dict[str, object] = {"updated": utcnow()}
        if isinstance(update.name, str):
            check_name(update.name, "PipelineSnapshotUpdate")
            holder = await self.snapshots.named(snapshot.pipeline_id, update.name)
            if holder is not None and holder != snapshot_id:
                if not update.replace:
                    raise SnapshotNameTaken(update.name, snapshot.pipeline_id)
                await self.snapshots.update(holder, {"name": None})
                await self.snapshots.unlink_triggers(holder)
            values["name"] = update.name
        elif update.name is False:
            values["name"] = None
        if update.description:
            values["description"] = update.description
        await self.snapshots.update(snapshot_id, values)
        await self.tags.attach(SNAPSHOT_TAG_RESOURCE, snapshot_id, update.add_tags or [], user_id)
        await self.tags.detach(SNAPSHOT_TAG_RESOURCE, snapshot_id, update.remove_tags or [])
        if values.get("name", snapshot.name) is None:
            await self.snapshots.unlink_triggers(snapshot_id)
        return await self.get(snapshot_id)

    async def delete(self, snapshot_id: uuid.UUID) -> None:
        """The snapshot and its tags (its runs stay, without it)."""
        await self.get(snapshot_id)
        await self.tags.detach_all(SNAPSHOT_TAG_RESOURCE, [snapshot_id])
        await self.snapshots.delete(snapshot_id)


class SnapshotCode(NamedTuple):
    store: ArtifactStore
    entry: Entry


class SnapshotCodeService:
    def __init__(self, session: AsyncSession, stores: ArtifactStores) -> None:
        self.session = session
        self.snapshots = SnapshotService(session)
        self.repository = SnapshotStoreRepository(session)
        self.stores = stores

    async def code(self, snapshot_id: uuid.UUID, limit: int) -> SnapshotCode:
        """The snapshot's code archive, checked: named, in its stack's artifact store,
        present, a file, at most ``limit`` bytes (errors as the reference's)."""
        snapshot = (await self.snapshots.get(snapshot_id)).snapshot
        if not snapshot.code_path:
            raise BadRequest(f"Snapshot {snapshot_id} has no code path.")
        component = None
        if snapshot.stack_id is not None:
            component = await self.repository.artifact_store(snapshot.stack_id)
        if component is None:
            raise BadRequest(f"Snapshot {snapshot_id} has no stack.")
        store = await self.stores.open(component, self.session)
        entries = [entry async for entry in store.walk(snapshot.code_path)]
        files = [entry for entry in entries if not entry.is_dir]
        if len(entries) != 1 or not files:
            raise NotFound(f"The file '{snapshot.code_path}' does not exist.")
        if files[0].size > limit:
            raise Forbidden(
                f"The file '{snapshot.code_path}' is too large to be downloaded. The maximum "
                f"download size allowed by your ZenML server is {limit} bytes."
            )
        return SnapshotCode(store, files[0])
