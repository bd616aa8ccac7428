"""The queue job: match an accepted event against its webhook's triggers, record the
executions and request each snapshot run from tracking.

Idempotent by event id. Matching reads the webhook's live triggers only (cached for
``worker_trigger_cache_ttl``); an event no trigger matches is done without touching the
database. Otherwise one transaction records the event, its executions (ids derived from
event and trigger) and the raw body; dispatching then only touches executions still
``pending``, each under its own id as ``Idempotency-Key``. So an event delivered twice, or
a worker killed anywhere in between, runs nothing twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

from arq.worker import Retry

from shared.db import SessionMaker, session_scope, utcnow
from webhooks.event.dispatch import SnapshotRunner, TransientDispatchError, UpstreamEvent
from webhooks.event.queue import EventMessage
from webhooks.event.repository import EventRepository
from webhooks.intake.providers import PayloadError, Provider
from webhooks.intake.providers.base import stored_payload
from webhooks.models import TriggerExecution, WebhookEvent, WebhookTrigger
from webhooks.trigger.configuration import match
from webhooks.trigger.repository import TriggerRepository

logger = logging.getLogger(__name__)

RECEIVED, PROCESSED, FAILED = "received", "processed", "failed"
MAX_CACHED_WEBHOOKS = 10_000
PENDING, DISPATCHED = "pending", "dispatched"


def execution_id(event_id: uuid.UUID, trigger_id: uuid.UUID) -> uuid.UUID:
    return uuid.uuid5(event_id, str(trigger_id))


class Consumer:
    def __init__(
        self,
        sessionmaker: SessionMaker,
        providers: Mapping[str, Provider],
        runner: SnapshotRunner,
        *,
        max_tries: int,
        retry_delay: float,
        trigger_ttl: float = 0.0,
    ) -> None:
        self.sessionmaker = sessionmaker
        self.providers = providers
        self.runner = runner
        self.max_tries = max_tries
        self.retry_delay = retry_delay
        self.trigger_ttl = trigger_ttl
        self._triggers: dict[uuid.UUID, tuple[float, list[WebhookTrigger]]] = {}

    async def process(self, message: EventMessage, job_try: int) -> str:
        """The event's final status (``processed`` or ``failed``)."""
        matched = await self._matching(message)
        if not matched:
            return PROCESSED  # nothing to run, so nothing to remember: no write at all
        async with session_scope(self.sessionmaker) as session:
            event = await session.get(WebhookEvent, message.event_id)
            if event is not None and event.status != RECEIVED:
                return event.status  # done before: nothing runs twice
            if event is None:
                await self._record(session, message, [t for t, _ in matched.values()])
        async with session_scope(self.sessionmaker, write=False) as session:
            pending = [
                e
                for e in await EventRepository(session).executions(message.event_id)
                if e.status == PENDING
            ]
        last_try = job_try >= self.max_tries
        failures = 0
        for execution in pending:
            upstream = UpstreamEvent(
                webhook_type=message.webhook_type,
                webhook_id=message.webhook_id,
                delivery_id=message.delivery_id,
                event_type=message.event_type,
                # None when the trigger changed since the execution was recorded.
                event=matched[execution.trigger_id][1] if execution.trigger_id in matched else None,
            )
            failures += not await self._dispatch(execution, upstream, last_try)
        status = FAILED if failures else PROCESSED
        async with session_scope(self.sessionmaker) as session:
            event = await session.get(WebhookEvent, message.event_id)
            assert event is not None
            event.status = status
            event.processed_at = utcnow()
        return status

    async def _matching(
        self, message: EventMessage
    ) -> dict[uuid.UUID, tuple[WebhookTrigger, dict[str, Any]]]:
        """The webhook's live triggers this event matches by id, each with the event as
        it matched (its curated form when there is one)."""
        provider = self.providers.get(message.webhook_type)
        try:
            payload = stored_payload(message.raw_body)
        except PayloadError:
            payload = None
        if provider is None or payload is None:
            logger.warning("event cannot be matched", extra={"event_id": str(message.event_id)})
            return {}
        matched = {}
        for trigger in await self._live_triggers(message.webhook_id):
            event = match(provider, trigger.configuration, message.event_type, payload)
            if event is not None:
                matched[trigger.id] = (trigger, event)
        return matched

    async def _live_triggers(self, webhook_id: uuid.UUID) -> list[WebhookTrigger]:
        """The webhook's active triggers, re-read at most every ``trigger_ttl`` seconds:
        most events match nothing, and they then cost no database round trip."""
        now = time.monotonic()
        cached = self._triggers.get(webhook_id)
        if cached is not None and cached[0] > now:
            return cached[1]
        async with session_scope(self.sessionmaker, write=False) as session:
            triggers = await TriggerRepository(session).live_for(webhook_id)
        if self.trigger_ttl > 0:
            if len(self._triggers) > MAX_CACHED_WEBHOOKS:
                self._triggers.clear()
            self._triggers[webhook_id] = (now + self.trigger_ttl, triggers)
        return triggers

    async def _record(
        self, session: Any, message: EventMessage, matched: list[WebhookTrigger]
    ) -> None:
        """The event, one pending execution per matched trigger, and the raw body."""
        session.add(
            WebhookEvent(
                id=message.event_id,
                webhook_id=message.webhook_id,
                project_id=message.project_id,
                webhook_type=message.webhook_type,
                event_type=message.event_type,
                delivery_id=message.delivery_id,
                received_at=message.received_at,
                matched=len(matched),
            )
        )
        await session.flush()
        for trigger in matched:
            session.add(
                TriggerExecution(
                    id=execution_id(message.event_id, trigger.id),
                    event_id=message.event_id,
                    trigger_id=trigger.id,
                    webhook_id=message.webhook_id,
                    project_id=message.project_id,
                    snapshot_id=trigger.snapshot_id,
                    delivery_id=message.delivery_id,
                    event_type=message.event_type,
                )
            )
        await session.flush()
        await EventRepository(session).retain(
            message.webhook_id, message.delivery_id, message.raw_body
        )

    async def _dispatch(
        self, execution: TriggerExecution, upstream: UpstreamEvent, last_try: bool
    ) -> bool:
        """Request the run; ``False`` when it failed for good (recorded on the execution).
        A transient failure retries the whole job later, until the last try."""
        async with session_scope(self.sessionmaker, write=False) as session:
            trigger = (
                await session.get(WebhookTrigger, execution.trigger_id)
                if execution.trigger_id
                else None
            )
        run_configuration = trigger.run_configuration if trigger is not None else None
        error: str | None
        try:
            result = await self.runner.run(
                execution.snapshot_id,
                run_configuration,
                upstream.trigger_execution(execution.id, execution.trigger_id),
            )
            run_id, error = result.run_id, result.error
        except TransientDispatchError as exc:
            if not last_try:
                await self._note_attempt(execution.id, str(exc))
                raise Retry(defer=self.retry_delay) from exc
            run_id, error = None, f"gave up after {self.max_tries} tries: {exc}"
        async with session_scope(self.sessionmaker) as session:
            row = await session.get(TriggerExecution, execution.id)
            assert row is not None
            row.attempts += 1
            row.status = FAILED if error else DISPATCHED
            row.run_id = run_id
            row.error = error
            row.updated = utcnow()
        if error:
            logger.warning("snapshot run refused", extra={"execution_id": str(execution.id)})
        return error is None

    async def _note_attempt(self, execution_id_: uuid.UUID, error: str) -> None:
        async with session_scope(self.sessionmaker) as session:
            row = await session.get(TriggerExecution, execution_id_)
            if row is not None:
                row.attempts += 1
                row.error = error
                row.updated = utcnow()


async def process_event(ctx: dict[str, Any], raw: dict[str, Any]) -> str:
    """The arq job (see :mod:`webhooks.event.queue` for how it is enqueued).

    arq fails a job for good on any exception but ``Retry`` (a timeout included), which
    would drop the event; so every failure becomes a retry, within a time budget under
    the job timeout, until the last try, which is logged as a dead letter.
    """
    consumer: Consumer = ctx["consumer"]
    message = EventMessage.model_validate(raw)
    try:
        async with asyncio.timeout(ctx["job_budget"]):
            return await consumer.process(message, job_try=ctx["job_try"])
    except Retry:
        raise
    except Exception as exc:
        if ctx["job_try"] >= consumer.max_tries:
            logger.error(
                "event dropped after its last try",
                extra={"event_id": str(message.event_id), "error": repr(exc)},
            )
            return FAILED
        logger.warning(
            "event processing failed; retrying",
            extra={"event_id": str(message.event_id), "error": repr(exc)},
        )
        raise Retry(defer=consumer.retry_delay) from exc
