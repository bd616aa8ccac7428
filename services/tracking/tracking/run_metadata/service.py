"""Business rules for run metadata: values set on runs, steps, artifact versions and
schedules, shown in their ``run_metadata`` when hydrated."""

from __future__ import annotations

import uuid
from collections import defaultdict

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.errors import NotFound
from tracking.project.scope import resolve_project_ref
from tracking.run_metadata.repository import RunMetadataRepository
from tracking.run_metadata.schemas import MetadataResourceTypes, RunMetadataRequest


class MetadataResourceNotFound(NotFound):
    def __init__(self, resource_type: MetadataResourceTypes, resource_id: uuid.UUID) -> None:
        super().__init__(
            f"Unable to get {resource_type.value.replace('_', ' ')} with ID "
            f"'{resource_id}': No {resource_type.value.replace('_', ' ')} with this ID found"
        )


class RunMetadataService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.repository = RunMetadataRepository(session)

    async def create(
        self, request: RunMetadataRequest, user_id: uuid.UUID, project: str | None = None
    ) -> None:
        """``project`` (a name or id, the deprecated path's) must exist; every resource
        must (404 otherwise), and nothing is written unless all do."""
        await resolve_project_ref(self.session, project or request.project)
        wanted: dict[MetadataResourceTypes, list[uuid.UUID]] = defaultdict(list)
        for resource in request.resources:
            wanted[resource.type].append(resource.id)
        for kind, ids in wanted.items():
            found = await self.repository.existing(kind, ids)
            if missing := [resource_id for resource_id in ids if resource_id not in found]:
                raise MetadataResourceNotFound(kind, missing[0])
        resources = list(dict.fromkeys((r.type, r.id) for r in request.resources))
        await self.repository.put(resources, request.encoded(), user_id)
