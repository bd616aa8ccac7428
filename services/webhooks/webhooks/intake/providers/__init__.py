"""The four providers. Each knows its sender's headers, signature, payload rules and
curated events; the intake and the trigger filter language are generic over them."""

from __future__ import annotations

from enum import StrEnum

from webhooks.intake.providers.base import Delivery, PayloadError, Provider, SemanticEvent
from webhooks.intake.providers.chat import Chat
from webhooks.intake.providers.codehost import Codehost
from webhooks.intake.providers.custom import Custom
from webhooks.intake.providers.task_tracker import TaskTracker


class WebhookType(StrEnum):
    CODEHOST = "codehost"
    CHAT = "chat"
    TASKS = "tasks"
    CUSTOM = "custom"


def providers(tolerance: float) -> dict[str, Provider]:
    """Every registered provider by its ``webhook_type``."""
    return {
        WebhookType.CODEHOST: Codehost(),
        WebhookType.CHAT: Chat(tolerance),
        WebhookType.TASKS: TaskTracker(),
        WebhookType.CUSTOM: Custom(tolerance),
    }


__all__ = ["Delivery", "PayloadError", "Provider", "SemanticEvent", "WebhookType", "providers"]
