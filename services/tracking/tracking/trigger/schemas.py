"""Trigger response models in the reference's shapes (a schedule's or a platform event's
body, by the trigger's type)."""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

from shared.envelope import Envelope
from shared.types import WireDatetime
from shared.users import NestedUser
from tracking.core.rendering import EnvelopeShape
from tracking.core.schemas import ProjectScopedBody, ScopedListQuery


class TriggerType(StrEnum):
    SCHEDULE = "schedule"
    PLATFORM_EVENT = "platform_event"


class TriggerFlavor(StrEnum):
    NATIVE_SCHEDULE = "native schedule"
    PLATFORM_EVENT = "platform event"


class TriggerRunConcurrency(StrEnum):
    SKIP = "skip"
    SUBMIT = "submit"


class SourceEntityType(StrEnum):
    PIPELINE = "pipeline"
    PIPELINE_RUN = "pipeline_run"
    PIPELINE_SNAPSHOT = "pipeline_snapshot"


# The events a platform event trigger may wait for, by its source's type, with the
# reference's descriptions (``GET /supported-events``).
SUPPORTED_EVENTS: dict[SourceEntityType, dict[str, str]] = {
    SourceEntityType.PIPELINE: {
        "run_completed": "A pipeline run of the source pipeline has completed successfully.",
        "run_failed": "A pipeline run of the source pipeline has failed.",
    },
    SourceEntityType.PIPELINE_RUN: {
        "completed": "Source pipeline run completed successfully.",
        "failed": "Source pipeline run failed.",
    },
    SourceEntityType.PIPELINE_SNAPSHOT: {
        "run_completed": "A pipeline run of the source snapshot has completed successfully.",
        "run_failed": "A pipeline run of the source snapshot has failed.",
    },
}


class SupportedEventsQuery(BaseModel):
    source_type: SourceEntityType


class SupportedEvent(BaseModel):
    value: str
    description: str | None


class SourceEntity(BaseModel):
    type: SourceEntityType
    id: uuid.UUID


class TriggerResponseBody(ProjectScopedBody):
    name: str
    active: bool = True
    type: TriggerType
    concurrency: TriggerRunConcurrency = TriggerRunConcurrency.SKIP
    is_archived: bool
    flavor: TriggerFlavor


class ScheduleTriggerResponseBody(TriggerResponseBody):
    """The schedule's fields come from the trigger's ``configuration``."""

    cron_expression: str | None = None
    interval: int | None = None
    end_time: WireDatetime | None = None
    start_time: WireDatetime | None = None
    run_once_start_time: WireDatetime | None = None
    max_runs: int | None = None
    next_occurrence: WireDatetime | None = None


class PlatformEventTriggerResponseBody(TriggerResponseBody):
    source_entity: SourceEntity | None = None
    target_events: list[str] = Field(default_factory=list)


class TriggerResponseMetadata(BaseModel):
    pass


class TriggerResponseResources(BaseModel):
    user: NestedUser | None = None
    snapshots: list[dict[str, Any]] = Field(default_factory=list)
    executable_snapshots: list[dict[str, Any]] = Field(default_factory=list)
    latest_run: dict[str, Any] | None = None
    snapshot_dispatch_states: dict[str, Any] = Field(default_factory=dict)


class ScheduleTriggerResponse(
    Envelope[ScheduleTriggerResponseBody, TriggerResponseMetadata, TriggerResponseResources]
):
    pass


class PlatformEventTriggerResponse(
    Envelope[PlatformEventTriggerResponseBody, TriggerResponseMetadata, TriggerResponseResources]
):
    pass


TriggerResponse = ScheduleTriggerResponse | PlatformEventTriggerResponse


class TriggerListQuery(ScopedListQuery):
    """Archived (soft-deleted) triggers are left out unless asked for, as the reference
    does, whatever the other filters."""

    is_archived: bool = False


class TriggerItem(NamedTuple):
    """A trigger's row and the snapshots attached to it (rendered body-only): the
    executable ones and what each shows (its source snapshot, else itself)."""

    trigger: Any
    executable: list[dict[str, Any]]
    shown: list[dict[str, Any]]

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.trigger.user_id  # type: ignore[no-any-return]


_SHAPES = {
    TriggerType.SCHEDULE: EnvelopeShape(ScheduleTriggerResponse),
    TriggerType.PLATFORM_EVENT: EnvelopeShape(PlatformEventTriggerResponse),
}


_SCHEDULE_FIELDS = (
    "cron_expression",
    "interval",
    "end_time",
    "start_time",
    "run_once_start_time",
    "max_runs",
)


def _platform_fields(row: Any) -> dict[str, Any]:
    """A platform event trigger's source (``<type>:<id>``) and events (comma-separated)."""
    source = None
    if row.source_entity:
        kind, _, source_id = row.source_entity.partition(":")
        source = {"type": kind, "id": source_id}
    events = [e for e in (row.target_events or "").split(",") if e]
    return {"source_entity": source, "target_events": events}


def trigger_response(item: TriggerItem, hydrate: bool, user: NestedUser | None) -> dict[str, Any]:
    row = item.trigger
    kind = TriggerType(row.type)
    if kind is TriggerType.PLATFORM_EVENT:
        body = _platform_fields(row)
    else:
        config = row.configuration or {}
        body = {key: config.get(key) for key in _SCHEDULE_FIELDS}
    resources: dict[str, Any] = {
        "user": user,
        "snapshots": item.shown,
        "executable_snapshots": item.executable,
        "latest_run": None,
        "snapshot_dispatch_states": {},
    }
    metadata: dict[str, Any] = {}
    return _SHAPES[kind](row, resources, hydrate=hydrate, body=body, metadata=metadata)
