"""Business rules for deployments: a snapshot of the same project, a deployer that is a
deployer, a unique name in the project."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.errors import BadRequest, NotFound
from shared.listing import Listing
from tracking.component.flavors import StackComponentType
from tracking.component.schemas import nested_component
from tracking.component.service import ComponentNotFound
from tracking.core.errors import NameTaken, ScopedNotFound
from tracking.core.schemas import ScopedListQuery
from tracking.core.service import ScopedService
from tracking.deployment.repository import DEPLOYMENTS, TAG_RESOURCE, DeploymentRepository
from tracking.deployment.schemas import DeploymentItem, DeploymentRequest, DeploymentUpdate
from tracking.flavor.custom import flavor_of, flavors_of
from tracking.models import Deployment, Pipeline, PipelineSnapshot, Stack, StackComponent
from tracking.pipeline.service import PipelineService
from tracking.stack.schemas import nested_stack
from tracking.tag.service import TagService


class DeploymentNotFound(ScopedNotFound):
    resource = "deployment"


class DeploymentAlreadyExists(NameTaken):
    resource = "deployment"


class DeploymentService(ScopedService[Deployment]):
    not_found = DeploymentNotFound
    name_taken = DeploymentAlreadyExists

    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, DeploymentRepository(session))
        self.tags = TagService(session)
        self.pipelines = PipelineService(session)

    async def list_page(
        self, listing: Listing, query: ScopedListQuery
    ) -> tuple[int, list[DeploymentItem]]:
        total, rows = await self.list_rows(DEPLOYMENTS, listing, query)
        return total, await self._items(rows)

    async def get(self, deployment_id: uuid.UUID) -> DeploymentItem:
        (item,) = await self._items([await self.read_row(deployment_id)])
        return item

    async def delete(self, deployment_id: uuid.UUID) -> None:
        await self.delete_row(deployment_id)
        await self.tags.detach_all(TAG_RESOURCE, [deployment_id])

    async def create(self, request: DeploymentRequest, user_id: uuid.UUID) -> DeploymentItem:
        project = await self.project(request.project)
        await self._snapshot_in(project.id, request.snapshot_id, "created", str(project.id))
        deployer = await self.session.get(StackComponent, request.deployer_id)
        if deployer is None:
            raise ComponentNotFound(request.deployer_id)
        if deployer.type != StackComponentType.DEPLOYER:
            raise BadRequest(
                f"The stack component with ID {request.deployer_id} is a {deployer.type}, "
                "not a deployer."
            )
        deployment = Deployment(
            project_id=project.id,
            name=request.name,
            snapshot_id=request.snapshot_id,
            deployer_id=request.deployer_id,
            auth_key=request.auth_key,
            user_id=user_id,
        )
        await self.insert(deployment, project)
        await self.tags.attach(TAG_RESOURCE, deployment.id, request.tag_names(), user_id)
        return await self.get(deployment.id)

    async def update(
        self, deployment_id: uuid.UUID, update: DeploymentUpdate, user_id: uuid.UUID
    ) -> DeploymentItem:
        """As the reference: a new snapshot must be of the deployment's project, a new
        name free in it."""
        deployment = await self.get_row(deployment_id)
        if update.snapshot_id is not None:
            project = await self.project(deployment.project_id)
            await self._snapshot_in(project.id, update.snapshot_id, "updated", project.name)
        for column, value in update.changes().items():
            setattr(deployment, column, value)
        deployment.updated = utcnow()
        if update.name is not None:
            await self.rename(deployment, update.name)
        await self.session.flush()
        await self.tags.attach(TAG_RESOURCE, deployment.id, update.add_tags or [], user_id)
        await self.tags.detach(TAG_RESOURCE, deployment.id, update.remove_tags or [])
        return await self.get(deployment.id)

    async def _snapshot_in(
        self, project_id: uuid.UUID, snapshot_id: uuid.UUID, operation: str, project: str
    ) -> None:
        """404 unless the snapshot is of the project (the reference's message)."""
        snapshot = await self.session.get(PipelineSnapshot, snapshot_id)
        if snapshot is None or snapshot.project_id != project_id:
            raise NotFound(
                f"The pipeline snapshot with ID {snapshot_id} referenced by the "
                f"deployment being {operation} was not found in the '{project}' project"
            )

    async def _by_id(self, model: type[Any], ids: set[Any]) -> dict[uuid.UUID, Any]:
        return await self.repository.by_id(model, ids)

    async def _items(self, rows: Sequence[Any]) -> list[DeploymentItem]:
        """Each deployment's snapshot, pipeline, deployer, stack and tags: one query per
        kind for the whole page."""
        snapshots = await self._by_id(PipelineSnapshot, {r.snapshot_id for r in rows})
        pipelines = await self._by_id(Pipeline, {s.pipeline_id for s in snapshots.values()})
        stacks = await self._by_id(Stack, {s.stack_id for s in snapshots.values()})
        deployers = await self._by_id(StackComponent, {r.deployer_id for r in rows})
        flavors = await flavors_of(self.session, ((d.type, d.flavor) for d in deployers.values()))
        tags = await self.tags.for_resources(TAG_RESOURCE, [r.id for r in rows])
        items = []
        for row in rows:
            snapshot = snapshots.get(row.snapshot_id)
            pipeline = pipelines.get(snapshot.pipeline_id) if snapshot else None
            stack = stacks.get(snapshot.stack_id) if snapshot else None
            deployer = deployers.get(row.deployer_id)
            items.append(
                DeploymentItem(
                    row,
                    snapshot,
                    pipeline,
                    nested_component(deployer, flavor_of(flavors, deployer))
                    if deployer is not None
                    else None,
                    nested_stack(stack) if stack is not None else None,
                    tags.get(row.id, ()),
                )
            )
        return items
