"""Business rules for services: a configuration is used by one service (409, the
reference's message); the pipeline run named must exist; no model version is kept here,
so one named is not found (404); a status sets the service's state."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.errors import Conflict, NotFound
from shared.listing import Listing
from tracking.core.errors import ScopedNotFound
from tracking.core.repository import new_row
from tracking.core.schemas import WorkspaceListQuery
from tracking.core.service import ScopedService
from tracking.models import PipelineRun, Service
from tracking.pipeline_run.repository import RunRepository
from tracking.service.repository import SERVICES, ServiceRepository
from tracking.service.schemas import ServiceItem, ServiceRequest, ServiceUpdate


class ServiceNotFound(ScopedNotFound):
    resource = "service"


def _missing(kind: str, ref_id: uuid.UUID, operation: str) -> NotFound:
    return NotFound(
        f"The {kind} with ID {ref_id} referenced by the service being {operation} was not found"
    )


class ServiceService(ScopedService[Service]):
    not_found = ServiceNotFound

    def __init__(self, session: AsyncSession) -> None:
        self.services = ServiceRepository(session)
        self.runs = RunRepository(session)
        super().__init__(session, self.services)

    async def list_page(
        self, listing: Listing, query: WorkspaceListQuery
    ) -> tuple[int, list[ServiceItem]]:
        total, rows = await self.list_rows(SERVICES, listing, query.scope())
        return total, await self._items(rows)

    async def get(self, service_id: uuid.UUID) -> ServiceItem:
        (item,) = await self._items([await self.read_row(service_id)])
        return item

    async def create(self, request: ServiceRequest, user_id: uuid.UUID) -> ServiceItem:
        """Into ``request.project_ref()`` (a workspace path's project wins)."""
        project = await self.project(request.project_ref())
        config = json.dumps(request.config)
        if await self.services.config_taken(config):
            raise Conflict(
                f"Unable to create service '{request.name}' with the given configuration: "
                "A service with the same configuration already exists."
            )
        if request.pipeline_run_id is not None:
            run = await self.session.get(PipelineRun, request.pipeline_run_id)
            if run is None or run.project_id != project.id:
                raise _missing("pipeline run", request.pipeline_run_id, "created")
        if request.model_version_id is not None:
            raise _missing("model version", request.model_version_id, "created")
        status = request.status
        service = new_row(
            Service,
            project_id=project.id,
            name=request.name,
            service_type=request.service_type.model_dump(mode="json"),
            type=request.service_type.type,
            flavor=request.service_type.flavor,
            service_source=request.service_source,
            admin_state=request.admin_state,
            state=status.get("state") if status else None,
            labels=request.labels or None,
            config=config,
            status=status or None,
            endpoint=request.endpoint or None,
            prediction_url=request.prediction_url,
            health_check_url=request.health_check_url,
            pipeline_name=request.config.get("pipeline_name"),
            pipeline_step_name=request.config.get("pipeline_step_name"),
            pipeline_run_id=request.pipeline_run_id,
            user_id=user_id,
        )
        await self.services.insert(service, Conflict("The service already exists."))
        return await self.get(service.id)

    async def update(self, service_id: uuid.UUID, update: ServiceUpdate) -> ServiceItem:
        """Fields given (not null) are set; an empty status, endpoint or labels clears it."""
        service = await self.get_row(service_id)
        if update.model_version_id is not None:
            raise _missing("model version", update.model_version_id, "updated")
        given = update.model_dump(exclude_none=True, mode="json")
        for name in ("name", "admin_state", "service_source", "prediction_url"):
            if name in given:
                setattr(service, name, given[name])
        if "health_check_url" in given:
            service.health_check_url = given["health_check_url"]
        for name in ("labels", "endpoint"):
            if name in given:
                setattr(service, name, given[name] or None)
        if "status" in given:
            service.status = given["status"] or None
            service.state = given["status"].get("state") if given["status"] else None
        service.updated = utcnow()
        await self.session.flush()
        return await self.get(service_id)

    async def delete(self, service_id: uuid.UUID) -> None:
        await self.delete_row(service_id)

    async def _items(self, rows: Sequence[Any]) -> list[ServiceItem]:
        runs = await self.runs.rows_by_id({row.pipeline_run_id for row in rows})
        return [ServiceItem(row, runs.get(row.pipeline_run_id)) for row in rows]
