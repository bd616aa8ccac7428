"""webhooks's tables. Importing this package registers them on ``SQLModel.metadata``."""

from webhooks.models.event import TriggerExecution, WebhookEvent, WebhookEventPayload
from webhooks.models.trigger import WebhookTrigger
from webhooks.models.webhook import Webhook

__all__ = ["TriggerExecution", "Webhook", "WebhookEvent", "WebhookEventPayload", "WebhookTrigger"]
