"""Accepted events as arq jobs (JSON, not pickle: a worker never unpickles what a
network sender shaped)."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import uuid
from typing import Any

from arq.constants import job_key_prefix
from pydantic import BaseModel
from redis.asyncio import Redis

from shared import tracing
from shared.responses import dumps
from webhooks.core.live import QueuedJob

PROCESS_EVENT = "process_event"
RETRY_EXECUTION = "retry_execution"
# Event ids are derived from (webhook, the delivery's key: what its signature covers, a
# signed delivery id or the body): a redelivery or a replay is the same event.
EVENT_NAMESPACE = uuid.UUID("0b6f3f1e-8a52-4d0e-9f3b-5c2f1e7d9a41")


_NAMESPACE_BYTES = EVENT_NAMESPACE.bytes


def event_id_for(webhook_id: uuid.UUID | str, key: str) -> tuple[str, str]:
    """The event id of a delivery, ``uuid5(EVENT_NAMESPACE, f"{webhook_id}:{key}")``,
    as its canonical text and its 32 hex digits (the arq job id). Worked out from the SHA-1
    directly: building a :class:`uuid.UUID` (and writing it out again) cost more than the
    hash, and this runs for every accepted delivery."""
    digest = bytearray(
        hashlib.sha1(  # noqa: S324  (what uuid5 hashes with)
            _NAMESPACE_BYTES + f"{webhook_id}:{key}".encode()
        ).digest()[:16]
    )
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    hex_id = digest.hex()
    return f"{hex_id[:8]}-{hex_id[8:12]}-{hex_id[12:16]}-{hex_id[16:20]}-{hex_id[20:]}", hex_id


class EventMessage(BaseModel):
    """What the worker needs to act on one accepted delivery, the raw body included."""

    event_id: uuid.UUID
    webhook_id: uuid.UUID
    project_id: uuid.UUID
    webhook_type: str
    event_type: str
    delivery_id: str
    received_at: dt.datetime
    content_type: str | None = None
    body: str  # base64 of the exact bytes received
    traceparent: str | None = None  # the intake's span, while tracing is on

    @property
    def raw_body(self) -> bytes:
        return base64.b64decode(self.body)


_second: list[tuple[int, str]] = [(-1, "")]  # the last second written, and its text


def utc_text(micros: int) -> str:
    """A Unix time in microseconds as ``datetime.isoformat(timespec="microseconds")``
    writes it in UTC, the date and time worked out once a second: this runs for every
    accepted delivery, and ``isoformat`` went through ``sprintf`` each time."""
    second, fraction = divmod(micros, 1_000_000)
    last, text = _second[0]
    if second != last:
        text = dt.datetime.fromtimestamp(second, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second[0] = (second, text)
    return f"{text}.{fraction:06d}+00:00"


def serializer(value: dict[str, Any]) -> bytes:
    # What pydantic's encoder writes (UUIDs and datetimes as JSON strings), written by
    # orjson: pydantic's own made UUID objects anew for every one it wrote (~12% of an
    # accepted delivery's instructions).
    return dumps(value)


def deserializer(data: bytes) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(data)
    return value


def encode(
    message: dict[str, Any], *, job_id: str, now_ms: int, function: str = PROCESS_EVENT
) -> QueuedJob:
    """The arq job ``job_id`` for one event (the fields of :class:`EventMessage`, as values
    :func:`serializer` writes: UUIDs may be asyncpg's), enqueued at ``now_ms``, in the exact
    form ``ArqRedis.enqueue_job`` writes (arq's ``serialize_job`` with :func:`serializer`,
    its dict made here: one Python call less). A plain dict: this runs for every accepted
    delivery, and the worker validates what it reads."""
    data = serializer({"t": None, "f": function, "a": (message,), "k": {}, "et": now_ms})
    return QueuedJob(job_id, data)


class RetryMessage(BaseModel):
    """An admin's retry of a failed trigger execution: its retries are counted from
    ``requested_at`` (the execution's ``retried_at``)."""

    execution_id: uuid.UUID
    requested_at: dt.datetime
    traceparent: str | None = None  # the admin's request's span, while tracing is on


def retry_job_id(execution_id: uuid.UUID) -> str:
    """The job of an execution's one retry: a second enqueue of it changes nothing."""
    return uuid.uuid5(execution_id, RETRY_EXECUTION).hex


class JobQueue:
    """Jobs the web service queues itself (accepted events go through
    :class:`webhooks.core.live.LiveState`): written as ``ArqRedis.enqueue_job`` writes
    them, expiring after ``expires_ms``, due at once."""

    def __init__(self, redis: Redis, queue: str, *, expires_ms: int) -> None:
        self.redis = redis
        self.queue = queue
        self.expires_ms = expires_ms

    async def retry_execution(self, execution_id: uuid.UUID, requested_at: dt.datetime) -> None:
        message = RetryMessage(
            execution_id=execution_id,
            requested_at=requested_at,
            traceparent=tracing.current_traceparent(),
        )
        now_ms = int(requested_at.timestamp() * 1000)
        job = encode(
            message.model_dump(mode="json"),
            job_id=retry_job_id(execution_id),
            now_ms=now_ms,
            function=RETRY_EXECUTION,
        )
        async with self.redis.pipeline(transaction=True) as tr:
            tr.set(job_key_prefix + job.job_id, job.data, nx=True, px=self.expires_ms)
            tr.zadd(self.queue, {job.job_id: now_ms}, nx=True)
            await tr.execute()
