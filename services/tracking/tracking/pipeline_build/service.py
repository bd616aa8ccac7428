"""Business rules for pipeline builds: stored as the client sent them."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import Listing
from tracking.core.errors import ScopedNotFound
from tracking.models import Pipeline, PipelineBuild, Stack
from tracking.pipeline_build.repository import PIPELINE_BUILDS, PipelineBuildRepository
from tracking.pipeline_build.schemas import (
    BuildItemRow,
    PipelineBuildListQuery,
    PipelineBuildRequest,
)
from tracking.project.scope import resolve_project_ref


class PipelineBuildNotFound(ScopedNotFound):
    resource = "pipeline build"


class BuildPipelineNotFound(ScopedNotFound):
    resource = "pipeline"


class BuildStackNotFound(ScopedNotFound):
    resource = "stack"


class PipelineBuildService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.repository = PipelineBuildRepository(session)

    async def list_page(
        self, listing: Listing, query: PipelineBuildListQuery
    ) -> tuple[int, list[BuildItemRow]]:
        scope = query.scope()
        project = await resolve_project_ref(self.session, scope.project)
        total, rows = await self.repository.page(
            PIPELINE_BUILDS, listing, project.id, scope.scope_user
        )
        return total, await self._items(rows, hydrate=listing.hydrate)

    async def get(self, build_id: uuid.UUID) -> BuildItemRow:
        row = await self.repository.read(build_id)
        if row is None:
            raise PipelineBuildNotFound(build_id)
        return (await self._items([row], hydrate=True))[0]

    async def create(self, request: PipelineBuildRequest, user_id: uuid.UUID) -> BuildItemRow:
        """Into ``request.project_ref()`` (a workspace path's project wins); the stack and
        pipeline named must exist (404)."""
        into = await resolve_project_ref(self.session, request.project_ref())
        if request.stack is not None and await self.session.get(Stack, request.stack) is None:
            raise BuildStackNotFound(request.stack)
        if (
            request.pipeline is not None
            and await self.session.get(Pipeline, request.pipeline) is None
        ):
            raise BuildPipelineNotFound(request.pipeline)
        build = PipelineBuild(
            project_id=into.id,
            stack_id=request.stack,
            pipeline_id=request.pipeline,
            images={key: item.model_dump(mode="json") for key, item in request.images.items()},
            is_local=request.is_local,
            contains_code=request.contains_code,
            zenml_version=request.zenml_version,
            python_version=request.python_version,
            checksum=request.checksum,
            stack_checksum=request.stack_checksum,
            duration=request.duration,
            user_id=user_id,
        )
        self.session.add(build)
        await self.session.flush()
        return await self.get(build.id)

    async def delete(self, build_id: uuid.UUID) -> None:
        build = await self.repository.get(build_id)
        if build is None:
            raise PipelineBuildNotFound(build_id)
        await self.repository.delete(build)

    async def _items(self, rows: Sequence[Any], *, hydrate: bool) -> list[BuildItemRow]:
        """Hydrated, each build's pipeline and stack: one query per kind for the page."""
        if not hydrate:
            return [BuildItemRow(row) for row in rows]
        pipelines = await self._by_id(Pipeline, {r.pipeline_id for r in rows})
        stacks = await self._by_id(Stack, {r.stack_id for r in rows})
        return [
            BuildItemRow(row, pipelines.get(row.pipeline_id), stacks.get(row.stack_id))
            for row in rows
        ]

    async def _by_id(self, model: type[Any], ids: set[Any]) -> dict[uuid.UUID, Any]:
        return await self.repository.by_id(model, ids)
