"""Schedule request and response models in the reference's shapes."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from shared.envelope import NamedEnvelope
from shared.types import WireDatetime
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import InputDatetime, ProjectScopedBody, ScopedRequest


class ScheduleRequest(ScopedRequest):
    name: str = Field(max_length=255)
    active: bool
    cron_expression: str | None = Field(default=None, max_length=255)
    start_time: InputDatetime | None = None
    end_time: InputDatetime | None = None
    interval_second: dt.timedelta | None = None
    catchup: bool = False
    run_once_start_time: InputDatetime | None = None
    orchestrator_id: uuid.UUID | None
    pipeline_id: uuid.UUID | None


class ScheduleUpdate(BaseModel):
    """The reference's ``ScheduleUpdate``: fields sent and not null change."""

    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, max_length=255)
    cron_expression: str | None = Field(default=None, max_length=255)
    active: bool | None = None


class ScheduleResponseBody(ProjectScopedBody):
    active: bool
    cron_expression: str | None = None
    start_time: WireDatetime | None = None
    end_time: WireDatetime | None = None
    interval_second: dt.timedelta | None = None
    catchup: bool = False
    run_once_start_time: WireDatetime | None = None
    is_archived: bool = False


class ScheduleResponseMetadata(BaseModel):
    orchestrator_id: uuid.UUID | None = None
    pipeline_id: uuid.UUID | None = None
    run_metadata: dict[str, Any] = Field(default_factory=dict)


class ScheduleResponseResources(BaseModel):
    user: NestedUser | None = None


class ScheduleResponse(
    NamedEnvelope[ScheduleResponseBody, ScheduleResponseMetadata, ScheduleResponseResources]
):
    pass


class ScheduleItem(NamedTuple):
    """A schedule's row and, read only to hydrate, the metadata logged on it."""

    schedule: Any
    run_metadata: dict[str, Any] | None = None

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.schedule.user_id  # type: ignore[no-any-return]


SCHEDULE = EnvelopeShape(ScheduleResponse)


def schedule_response(item: ScheduleItem, hydrate: bool, user: NestedUser | None) -> dict[str, Any]:
    row = item.schedule
    seconds = row.interval_second
    interval = dt.timedelta(seconds=seconds) if seconds is not None else None
    metadata = {"run_metadata": item.run_metadata or {}} if hydrate else None
    return SCHEDULE(
        row, {"user": user}, hydrate=hydrate, body={"interval_second": interval}, metadata=metadata
    )
