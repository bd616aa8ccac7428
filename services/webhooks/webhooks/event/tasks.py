"""The queue job: match an accepted event against its webhook's triggers, record the
executions and request each snapshot run from tracking.

Idempotent by event id. Matching reads the webhook's live triggers only (cached for
``worker_trigger_cache_ttl``); an event no trigger matches is done without touching the
database. Otherwise one transaction records the event, its executions (ids derived from
event and trigger) and the raw body; dispatching then only touches executions still
``pending``, each under its own id as ``Idempotency-Key``. So an event delivered twice, or
a worker killed anywhere in between, runs nothing twice.

A transient failure (tracking out of reach or answering a transient status, the database
out of reach, a try past its time budget) runs the job again on the schedule of
:class:`~webhooks.event.retry.RetryPolicy`, until its horizon; only then, or on a lasting
refusal, is an execution ``failed``, with its last error. An admin may re-run a failed
execution once (:func:`retry_execution`, queued by the trigger API).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import gzip
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from arq.worker import Retry
from sqlmodel.ext.asyncio.session import AsyncSession

from shared import tracing
from shared.db import Clock, SessionMaker, session_scope, utcnow
from webhooks.core.metrics import EXECUTIONS_GIVEN_UP, EXECUTIONS_WAITING, WORKER_JOBS
from webhooks.event.dispatch import SnapshotRunner, TransientDispatchError, UpstreamEvent
from webhooks.event.queue import EventMessage, RetryMessage
from webhooks.event.repository import EventRepository
from webhooks.event.retry import RetryPolicy
from webhooks.intake.providers import PayloadError, Provider
from webhooks.intake.providers.base import stored_payload
from webhooks.models import TriggerExecution, WebhookEvent, WebhookEventPayload, WebhookTrigger
from webhooks.trigger.configuration import match
from webhooks.trigger.repository import TriggerRepository

logger = logging.getLogger(__name__)

RECEIVED, PROCESSED, FAILED = "received", "processed", "failed"
MAX_CACHED_WEBHOOKS = 10_000
PENDING, DISPATCHED = "pending", "dispatched"
# How long a retry job waits for the transaction that queued it to commit (it is queued
# inside it, so that Redis out of reach fails the request rather than losing the retry).
COMMIT_GRACE = dt.timedelta(minutes=1)


def execution_id(event_id: uuid.UUID, trigger_id: uuid.UUID) -> uuid.UUID:
    return uuid.uuid5(event_id, str(trigger_id))


async def _trigger_of(session: AsyncSession, execution: TriggerExecution) -> WebhookTrigger | None:
    """The execution's trigger as it is now (``None`` once deleted)."""
    if execution.trigger_id is None:
        return None
    return await session.get(WebhookTrigger, execution.trigger_id)


class Consumer:
    def __init__(
        self,
        sessionmaker: SessionMaker,
        providers: Mapping[str, Provider],
        runner: SnapshotRunner,
        *,
        retries: RetryPolicy,
        trigger_ttl: float = 0.0,
        clock: Clock = utcnow,
    ) -> None:
        self.sessionmaker = sessionmaker
        self.providers = providers
        self.runner = runner
        self.retries = retries
        self.trigger_ttl = trigger_ttl
        self.clock = clock
        self._triggers: dict[uuid.UUID, tuple[float, list[WebhookTrigger]]] = {}

    async def process(self, message: EventMessage, job_try: int) -> str:
        """The event's final status (``processed`` or ``failed``); ``Retry`` while an
        execution waits for tracking."""
        matched = await self._matching(message)
        if not matched and job_try == 1:
            return PROCESSED  # nothing to run, so nothing to remember: no write at all
        async with session_scope(self.sessionmaker) as session:
            event = await session.get(WebhookEvent, message.event_id)
            if event is not None and event.status != RECEIVED:
                return event.status  # done before: nothing runs twice
            if event is None:
                if not matched:
                    return PROCESSED
                await self._record(session, message, [t for t, _ in matched.values()])
            # Else an earlier try recorded it: its executions still get their runs, even
            # if their trigger no longer matches (changed or deactivated while they waited).
        async with session_scope(self.sessionmaker) as session:
            pending = [
                (e, await _trigger_of(session, e))
                for e in await EventRepository(session).executions(message.event_id)
                if e.status == PENDING
            ]
        for execution, trigger in pending:
            upstream = UpstreamEvent(
                webhook_type=message.webhook_type,
                webhook_id=message.webhook_id,
                delivery_id=message.delivery_id,
                event_type=message.event_type,
                # None when the trigger changed since the execution was recorded.
                event=matched[execution.trigger_id][1] if execution.trigger_id in matched else None,
            )
            await self._dispatch(execution, trigger, upstream, job_try, message.received_at)
        return await self._settle(message.event_id)

    async def retry(self, message: RetryMessage, job_try: int) -> str:
        """An admin's retry of one failed execution: requested again, its transient
        failures retried until the horizon counted from the retry. The event's status
        afterwards."""
        async with session_scope(self.sessionmaker) as session:
            execution = await session.get(TriggerExecution, message.execution_id)
            if execution is None:
                return PROCESSED  # deleted with its event since
            if execution.retried_at is None:
                # The request that queued this job has not committed (yet), or rolled back.
                if self.clock() - message.requested_at < COMMIT_GRACE:
                    raise Retry(defer=self.retries.first_delay)
                logger.warning("retry never committed", extra={"execution_id": str(execution.id)})
                return execution.status
            if execution.status != PENDING:
                return execution.status  # this job's earlier try settled it
            event = await session.get(WebhookEvent, execution.event_id)
            assert event is not None  # executions are deleted with their event
            trigger = await _trigger_of(session, execution)
            raw = await session.get(WebhookEventPayload, event.id)
        upstream = UpstreamEvent(
            webhook_type=event.webhook_type,
            webhook_id=event.webhook_id,
            delivery_id=event.delivery_id,
            event_type=event.event_type,
            event=self._matched_again(event, trigger, raw),
        )
        await self._dispatch(execution, trigger, upstream, job_try, message.requested_at)
        return await self._settle(event.id)

    def _matched_again(
        self,
        event: WebhookEvent,
        trigger: WebhookTrigger | None,
        raw: WebhookEventPayload | None,
    ) -> dict[str, Any] | None:
        """The event as ``trigger`` matches it now, from its retained body (``None`` when
        the trigger, the body or the match is gone)."""
        provider = self.providers.get(event.webhook_type)
        if trigger is None or raw is None or provider is None or event.event_type is None:
            return None
        try:
            payload = stored_payload(gzip.decompress(raw.body))
        except PayloadError:
            return None
        return match(provider, trigger.configuration, event.event_type, payload)

    async def _settle(self, event_id: uuid.UUID) -> str:
        """The event's status from its executions': ``failed`` if one failed."""
        async with session_scope(self.sessionmaker) as session:
            executions = await EventRepository(session).executions(event_id)
            event = await session.get(WebhookEvent, event_id)
            assert event is not None
            event.status = FAILED if any(e.status == FAILED for e in executions) else PROCESSED
            event.processed_at = utcnow()
            return event.status

    async def give_up(
        self,
        error: str,
        *,
        event_id: uuid.UUID | None = None,
        execution_id: uuid.UUID | None = None,
    ) -> None:
        """Past the horizon of a job that kept failing outside a run request (the
        database, a bug): the event's pending executions (or the one retried) fail with
        ``error``, if the database lets us write that."""
        async with session_scope(self.sessionmaker) as session:
            if execution_id is not None:
                row = await session.get(TriggerExecution, execution_id)
                rows = [row] if row is not None else []
            elif event_id is not None:
                rows = await EventRepository(session).executions(event_id)
            else:
                rows = []
            for row in rows:
                if row.status != PENDING:
                    continue
                row.status, row.error, row.next_attempt_at = FAILED, error, None
                row.updated = utcnow()
                event = await session.get(WebhookEvent, row.event_id)
                if event is not None:
                    event.status, event.error = FAILED, error

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
        async with session_scope(self.sessionmaker) as session:
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
        event = WebhookEvent(
            id=message.event_id,
            webhook_id=message.webhook_id,
            project_id=message.project_id,
            webhook_type=message.webhook_type,
            event_type=message.event_type,
            delivery_id=message.delivery_id,
            received_at=message.received_at,
            matched=len(matched),
        )
        session.add(event)
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
        EventRepository(session).retain(event, message.raw_body)
        await session.flush()

    async def _dispatch(
        self,
        execution: TriggerExecution,
        trigger: WebhookTrigger | None,
        upstream: UpstreamEvent,
        job_try: int,
        start: dt.datetime,
    ) -> None:
        """Request the run (with ``trigger``'s run configuration, read with the
        execution) and record the outcome on the execution. A transient failure retries
        the whole job later (``Retry``), until the horizon counted from ``start``; past it
        the execution fails with that failure."""
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
            now = self.clock()
            delay = self.retries.delay(job_try, now, start)
            if delay is not None:
                await self._note_attempt(execution.id, str(exc), now + delay)
                EXECUTIONS_WAITING.inc()
                raise Retry(defer=delay) from exc
            EXECUTIONS_GIVEN_UP.inc()
            run_id, error = None, self.retries.gave_up(str(exc))
        async with session_scope(self.sessionmaker) as session:
            row = await session.get(TriggerExecution, execution.id)
            assert row is not None
            row.attempts += 1
            row.status = FAILED if error else DISPATCHED
            row.run_id = run_id
            row.error = error
            row.next_attempt_at = None
            row.updated = utcnow()
        if error:
            logger.warning("snapshot run refused", extra={"execution_id": str(execution.id)})

    async def _note_attempt(
        self, execution_id_: uuid.UUID, error: str, next_attempt_at: dt.datetime
    ) -> None:
        async with session_scope(self.sessionmaker) as session:
            row = await session.get(TriggerExecution, execution_id_)
            if row is not None:
                row.attempts += 1
                row.error = error
                row.next_attempt_at = next_attempt_at
                row.updated = utcnow()


async def process_event(ctx: dict[str, Any], raw: dict[str, Any]) -> str:
    """The arq job of an accepted event (see :mod:`webhooks.event.queue` for how it is
    enqueued); its retries are counted from the event's receipt."""
    consumer: Consumer = ctx["consumer"]
    message = EventMessage.model_validate(raw)
    return await _attempt(
        ctx,
        message.received_at,
        functools.partial(consumer.process, message, ctx["job_try"]),
        functools.partial(consumer.give_up, event_id=message.event_id),
        {"event_id": str(message.event_id)},
        "process_event",
        message.traceparent,
    )


async def retry_execution(ctx: dict[str, Any], raw: dict[str, Any]) -> str:
    """The arq job of an admin's retry of a failed execution; its retries are counted
    from the retry."""
    consumer: Consumer = ctx["consumer"]
    message = RetryMessage.model_validate(raw)
    return await _attempt(
        ctx,
        message.requested_at,
        functools.partial(consumer.retry, message, ctx["job_try"]),
        functools.partial(consumer.give_up, execution_id=message.execution_id),
        {"execution_id": str(message.execution_id)},
        "retry_execution",
        message.traceparent,
    )


async def _attempt(
    ctx: dict[str, Any],
    start: dt.datetime,
    work: Callable[[], Awaitable[str]],
    give_up: Callable[[str], Awaitable[None]],
    about: dict[str, str],
    function: str,
    traceparent: str | None,
) -> str:
    """One try of a job, in a span continuing the trace of the request that queued it
    (``traceparent``; while tracing is on). arq fails a job for good on any exception but
    ``Retry`` (a timeout included), which would drop the event; so every failure becomes
    a retry, within a time budget under the job timeout, until the horizon counted from
    ``start``; past it the job ends, logged as a dead letter, after ``give_up`` recorded
    the failure where it could. The budget is the only timer on a try (arq's is off, see
    :mod:`webhooks.event.batch_worker`): a second one, cancelling the try while it
    unwinds from the first, would turn the retry into arq's failure."""
    consumer: Consumer = ctx["consumer"]
    attributes = {**about, "job_try": ctx["job_try"]}
    with tracing.consumer_span(function, traceparent, attributes):
        try:
            async with asyncio.timeout(ctx["job_budget"]):
                result = await work()
        except Retry:
            WORKER_JOBS.labels(function, "retry").inc()
            raise
        except Exception as exc:
            extra = {**about, "error": repr(exc)}
            delay = consumer.retries.delay(ctx["job_try"], consumer.clock(), start)
            if delay is not None:
                logger.warning("event processing failed; retrying", extra=extra)
                WORKER_JOBS.labels(function, "retry").inc()
                raise Retry(defer=delay) from exc
            logger.error("event dropped: its retry horizon passed", extra=extra)
            WORKER_JOBS.labels(function, "dead_letter").inc()
            try:
                await give_up(consumer.retries.gave_up(repr(exc)))
            except Exception:
                logger.exception("could not record the dropped event as failed", extra=extra)
            return FAILED
        WORKER_JOBS.labels(function, "done").inc()
        return result
