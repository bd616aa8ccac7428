"""Service request and response models in the reference's shapes."""

from __future__ import annotations

import json
import uuid
from enum import StrEnum
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from shared.envelope import NamedEnvelope
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import ProjectScopedBody, ScopedRequest
from tracking.pipeline_run.schemas import PipelineRunResponse, nested_run


class ServiceState(StrEnum):
    INACTIVE = "inactive"
    ACTIVE = "active"
    PENDING_STARTUP = "pending_startup"
    PENDING_SHUTDOWN = "pending_shutdown"
    ERROR = "error"
    SCALED_TO_ZERO = "scaled_to_zero"


class ServiceType(BaseModel):
    type: str
    flavor: str
    name: str = ""
    description: str = ""
    logo_url: str = ""


class ServiceRequest(ScopedRequest):
    model_config = ConfigDict(extra="ignore", protected_namespaces=())

    name: str = Field(max_length=255)
    service_type: ServiceType
    service_source: str | None = None
    admin_state: ServiceState | None = None
    config: dict[str, Any]
    labels: dict[str, str] | None = None
    status: dict[str, Any] | None = None
    endpoint: dict[str, Any] | None = None
    prediction_url: str | None = None
    health_check_url: str | None = None
    model_version_id: uuid.UUID | None = None
    pipeline_run_id: uuid.UUID | None = None


class ServiceUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore", protected_namespaces=())

    name: str | None = Field(default=None, max_length=255)
    admin_state: ServiceState | None = None
    service_source: str | None = None
    status: dict[str, Any] | None = None
    endpoint: dict[str, Any] | None = None
    prediction_url: str | None = None
    health_check_url: str | None = None
    labels: dict[str, str] | None = None
    model_version_id: uuid.UUID | None = None


class ServiceResponseBody(ProjectScopedBody):
    service_type: ServiceType
    labels: dict[str, str] | None = None
    state: ServiceState | None = None


class ServiceResponseMetadata(BaseModel):
    service_source: str | None
    admin_state: ServiceState | None
    config: dict[str, Any]
    status: dict[str, Any] | None
    endpoint: dict[str, Any] | None = None
    prediction_url: str | None = None
    health_check_url: str | None = None


class ServiceResponseResources(BaseModel):
    model_config = ConfigDict(protected_namespaces=())

    user: NestedUser | None = None
    pipeline_run: PipelineRunResponse | None = None
    model_version: dict[str, Any] | None = None


class ServiceResponse(
    NamedEnvelope[ServiceResponseBody, ServiceResponseMetadata, ServiceResponseResources]
):
    pass


class ServiceItem(NamedTuple):
    """A service's row and its pipeline run's (``None`` when it has none)."""

    service: Any
    run: Any = None

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.service.user_id  # type: ignore[no-any-return]


SERVICE = EnvelopeShape(ServiceResponse)


def service_response(item: ServiceItem, hydrate: bool, user: NestedUser | None) -> dict[str, Any]:
    """The configuration is kept as its JSON text; no model versions are kept here."""
    row = item.service
    resources = {
        "user": user,
        "pipeline_run": nested_run(item.run) if item.run is not None else None,
        "model_version": None,
    }
    metadata = {"config": json.loads(row.config)} if hydrate else None
    return SERVICE(row, resources, hydrate=hydrate, metadata=metadata)
