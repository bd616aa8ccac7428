"""The intake algorithm: provider → pre-validation → lookup → signature → active →
payload → stats and enqueue (atomically, before the answer) → the provider's answer."""

from __future__ import annotations

import asyncio
import base64
import logging
import time
import uuid
from typing import Any, NamedTuple

from redis.exceptions import RedisError
from sqlalchemy.exc import DBAPIError

from shared import tracing
from shared.errors import HTTPDetailError, ServiceUnavailable
from shared.secret_box import SecretUnreadable
from webhooks.core.live import Counted, LiveState, Outcome
from webhooks.core.metrics import WEBHOOK_DELIVERIES
from webhooks.event.queue import encode, event_id_for, utc_text
from webhooks.intake.cache import CachedWebhook, WebhookCache
from webhooks.intake.providers import Delivery, PayloadError, Provider
from webhooks.intake.providers.base import MAX_ERROR_SUMMARY, RequestHeaders, body_key

logger = logging.getLogger(__name__)

# A cached webhook found stale is reloaded and the delivery decided again; a webhook
# changing on every attempt (an update storm) gets a 503 and its sender retries.
ATTEMPTS = 3


class IntakeError(HTTPDetailError):
    """The reference's intake errors: ``{"detail": "<message>"}``."""


def not_found() -> IntakeError:
    return IntakeError(404, "Not Found")


class Answer(NamedTuple):
    """What the intake answers: the status, and a text body for Slack's challenge."""

    status_code: int
    text: str | None = None


IGNORED = Answer(202)
"""A delivery the provider ignores before any lookup (an event family triggers cannot use)."""


def _unavailable(exc: Exception) -> ServiceUnavailable:
    logger.warning("intake could not reach its stores", extra={"error": repr(exc)})
    return ServiceUnavailable(
        "Events cannot be accepted right now; retry later.", headers={"Retry-After": "5"}
    )


class IntakeService:
    def __init__(
        self, providers: dict[str, Provider], cache: WebhookCache, live: LiveState
    ) -> None:
        self.providers = providers
        self.cache = cache
        self.live = live

    def provider(self, webhook_type: str) -> Provider:
        provider = self.providers.get(webhook_type)
        if provider is None:
            raise not_found()
        return provider

    def pre_validate(self, provider: Provider, headers: RequestHeaders) -> bool:
        """Headers only, before any lookup: ``False`` means ignore (202)."""
        try:
            return provider.pre_validate(headers)
        except PayloadError as exc:
            raise IntakeError(400, str(exc)) from None

    async def receive(
        self, provider: Provider, webhook_id: uuid.UUID, headers: RequestHeaders, body: bytes
    ) -> Answer:
        try:
            for _ in range(ATTEMPTS):
                # Nearly always cached: no coroutine for the lookup then.
                webhook = self.cache.cached(webhook_id) or await self.cache.get(webhook_id)
                if webhook is None or webhook.webhook_type != provider.name:
                    raise not_found()
                answer = await self._decide(provider, webhook, headers, body)
                if answer is not None:
                    return answer
                self.cache.evict(webhook_id)
        except (RedisError, DBAPIError, OSError, SecretUnreadable) as exc:
            raise _unavailable(exc) from None
        raise ServiceUnavailable("The webhook is changing; retry later.")

    async def _decide(
        self, provider: Provider, webhook: CachedWebhook, headers: RequestHeaders, body: bytes
    ) -> Answer | None:
        """The answer, or ``None`` when ``webhook`` turned out stale."""
        now = time.time()
        now_us = int(now * 1_000_000)
        auth_error = provider.authenticate(body, headers, webhook.secret, now)
        if auth_error is not None:
            # Failures count only on active webhooks (an inactive one is not listening).
            outcome: Counted = "auth_failed" if webhook.active else "none"
            recorded = await self._record(webhook, outcome, now_us, auth_error)
            if _stale(provider.name, outcome, recorded):
                return None
            raise IntakeError(401, "Invalid webhook authentication.")
        if not webhook.active:
            if _stale(provider.name, "none", await self._record(webhook, "none", now_us)):
                return None
            raise IntakeError(409, "Webhook is inactive.")
        try:
            delivery, _payload = provider.parse(body, headers)
        except PayloadError as exc:
            recorded = await self._record(webhook, "invalid_payload", now_us, str(exc))
            if _stale(provider.name, "invalid_payload", recorded):
                return None
            raise IntakeError(400, str(exc)) from None
        recorded = await self._accept(webhook, delivery, headers, body, now_us)
        if _stale(provider.name, "accepted", recorded):
            return None
        return Answer(delivery.status_code, delivery.text)

    def _record(
        self, webhook: CachedWebhook, outcome: Counted, now_us: int, error: str = ""
    ) -> asyncio.Future[Outcome]:
        return self.live.record(
            webhook.id, webhook.version, outcome, now_us, error=error[:MAX_ERROR_SUMMARY]
        )

    def _accept(
        self,
        webhook: CachedWebhook,
        delivery: Delivery,
        headers: RequestHeaders,
        body: bytes,
        now_us: int,
    ) -> asyncio.Future[Outcome]:
        """(Futures, not coroutines, down from :meth:`_decide`: a frame less for each.)"""
        if delivery.event_type is None:  # a control delivery: counted, nothing to run
            return self._record(webhook, "accepted", now_us)
        # The event and its job are named by what the signature covers, never by an
        # unsigned header: a replay's job is the first one's, whatever it carries.
        key = delivery.key or body_key(body)
        event_id, job_id = event_id_for(webhook.key, key)
        delivery_id = delivery.delivery_id or key
        message = {
            "event_id": event_id,
            "webhook_id": webhook.id,
            "project_id": webhook.project_id,
            "webhook_type": webhook.webhook_type,
            "event_type": delivery.event_type,
            "delivery_id": delivery_id,
            "received_at": utc_text(now_us),
            "content_type": headers.get("content-type"),
            "body": base64.b64encode(body).decode(),
        }
        if tracing.tracer is not None:  # the worker's span continues this request's
            message["traceparent"] = tracing.current_traceparent()
        job = encode(message, job_id=job_id, now_ms=now_us // 1000)
        return self.live.record(
            webhook.id,
            webhook.version,
            "accepted",
            now_us,
            # The job id is the hash of webhook and key: a replay's job is this one.
            job=job,
        )


# (provider, outcome) -> its series: labels() costs more than the update.
_DELIVERIES: dict[tuple[str, str], Any] = {}


def _stale(provider: str, outcome: Counted, recorded: Outcome) -> bool:
    """Whether the decision was taken on a stale webhook (taken again, not counted);
    else the delivery is counted by the stats' categories (``none``: an inactive
    webhook's; a replay is a ``duplicate``)."""
    if recorded is Outcome.STALE:
        return True
    label = "duplicate" if recorded is Outcome.DUPLICATE else outcome
    series = _DELIVERIES.get((provider, label))
    if series is None:
        series = _DELIVERIES[provider, label] = WEBHOOK_DELIVERIES.labels(provider, label)
    series.inc()
    return False
