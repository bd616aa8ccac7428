"""``tasks`` (ClickUp and senders speaking its protocol)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel

from webhooks.intake.providers.base import (
    INVALID_SIGNATURE,
    Delivery,
    PayloadError,
    RequestHeaders,
    SemanticEvent,
    header,
    json_object,
    text,
)
from webhooks.intake.providers.targets import target_model
from webhooks.intake.signatures import hmac_hex, same

SIGNATURE_HEADERS = ("x-tasks-signature", "x-signature")
LIST_FIELDS = ("list_id", "space_id", "folder_id")
TASK_FIELDS = (*LIST_FIELDS, "task_id")
TASK_EVENTS = (
    "taskCreated",
    "taskUpdated",
    "taskDeleted",
    "taskMoved",
    "taskAssigneeUpdated",
    "taskCommentPosted",
)
LIST_EVENTS = ("listCreated", "listUpdated", "listDeleted")


def _history_ids(payload: Mapping[str, Any]) -> list[str]:
    items = payload.get("history_items")
    if not isinstance(items, list):
        return []
    return sorted(i for item in items if isinstance(item, dict) and (i := text(item.get("id"))))


def _last_status(payload: Mapping[str, Any]) -> str | None:
    items = payload.get("history_items")
    if not isinstance(items, list) or not items or not isinstance(items[-1], dict):
        return None
    after = items[-1].get("after")
    if isinstance(after, dict):
        return text(after.get("status"))
    return text(after)


class TaskTracker:
    name: ClassVar[str] = "tasks"
    min_targets: ClassVar[int] = 1
    targets: ClassVar[Mapping[str, type[BaseModel]]] = {
        **{kind: target_model(kind, TASK_FIELDS) for kind in TASK_EVENTS},
        "taskStatusUpdated": target_model("taskStatusUpdated", (*TASK_FIELDS, "status")),
        **{kind: target_model(kind, LIST_FIELDS) for kind in LIST_EVENTS},
    }

    def pre_validate(self, headers: RequestHeaders) -> bool:
        return True

    def authenticate(
        self, body: bytes, headers: RequestHeaders, secret: str, now: float
    ) -> str | None:
        presented = header(headers, SIGNATURE_HEADERS)
        if presented is None:
            return "Missing x-signature header."
        expected = hmac_hex(secret.encode(), body)
        return None if same(expected, presented.lower()) else INVALID_SIGNATURE

    def parse(self, body: bytes, headers: RequestHeaders) -> tuple[Delivery, dict[str, Any] | None]:
        payload = json_object(body)
        webhook_id = text(payload.get("webhook_id"))
        if not webhook_id:
            raise PayloadError("Missing or empty ClickUp 'webhook_id' field.")
        event = payload.get("event")
        if not isinstance(event, str) or not event:
            raise PayloadError("Missing or empty ClickUp 'event' field.")
        history = _history_ids(payload)
        # ClickUp's idempotency key: the sender's webhook and the history items it reports
        # (in the signed body); without history items, none (the body names the event).
        key = f"{webhook_id}:{','.join(history)}" if history else None
        return Delivery(event, key), payload

    def semantic_events(self, event_type: str, payload: Mapping[str, Any]) -> list[SemanticEvent]:
        if event_type in self.targets:
            names = LIST_FIELDS if event_type in LIST_EVENTS else TASK_FIELDS
            fields: dict[str, str | None] = {name: text(payload.get(name)) for name in names}
            if event_type == "taskStatusUpdated":
                fields["status"] = _last_status(payload)
            return [SemanticEvent(event_type, fields)]
        return []
