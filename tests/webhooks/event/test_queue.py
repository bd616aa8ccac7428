"""Accepted events as arq jobs: the event id, the received time, the job's bytes."""

from __future__ import annotations

import datetime as dt
import random
import uuid

import pydantic_core
import pytest
from arq.jobs import deserialize_job, serialize_job

from webhooks.event.queue import (
    EVENT_NAMESPACE,
    EventMessage,
    deserializer,
    encode,
    event_id_for,
    serializer,
    utc_text,
)

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    "delivery_id", ["", "abc", "a" * 300, "72d3162e-cc78-11e3-81ab-4c9367dc0958", "é:ü/☃", "\x00"]
)
def test_the_event_id_is_the_uuid5_of_webhook_and_delivery(delivery_id):
    for _ in range(20):
        webhook_id = uuid.uuid4()
        expected = uuid.uuid5(EVENT_NAMESPACE, f"{webhook_id}:{delivery_id}")
        assert event_id_for(webhook_id, delivery_id) == (str(expected), expected.hex)
        assert event_id_for(str(webhook_id), delivery_id) == (str(expected), expected.hex)


def test_utc_text_is_what_isoformat_writes():
    rng = random.Random(7)
    now = int(dt.datetime.now(dt.UTC).timestamp() * 1_000_000)
    samples = [0, 1, 999_999, 1_000_000, now, now + 1, now + 1_000_000]
    samples += [rng.randrange(0, 4 * 10**15) for _ in range(2000)]
    samples += [now + rng.randrange(5_000_000) for _ in range(2000)]  # within a few seconds
    for micros in samples:
        expected = (EPOCH + dt.timedelta(microseconds=micros)).isoformat(timespec="microseconds")
        assert utc_text(micros) == expected


class DriverUUID(uuid.UUID):
    """As asyncpg's UUIDs: a subclass, which orjson does not write by itself."""


@pytest.mark.parametrize("uuid_type", [uuid.UUID, DriverUUID])
def test_a_job_reads_back_as_the_event_it_was_made_from(uuid_type):
    webhook_id, project_id = uuid_type(int=uuid.uuid4().int), uuid_type(int=uuid.uuid4().int)
    event_id, job_id = event_id_for(webhook_id, "d-1")
    message = {
        "event_id": event_id,
        "webhook_id": webhook_id,
        "project_id": project_id,
        "webhook_type": "custom",
        "event_type": "build.finished",
        "delivery_id": "d-1",
        "received_at": utc_text(1_700_000_000_123_456),
        "content_type": "application/json",
        "body": "e30=",
    }
    job = encode(message, job_id=job_id, now_ms=1_700_000_000_123)
    assert job.job_id == uuid.UUID(event_id).hex
    # What arq's own enqueue writes for the same job, byte for byte.
    arqs = serialize_job(
        "process_event", (message,), {}, None, 1_700_000_000_123, serializer=serializer
    )
    assert job.data == arqs
    # The bytes pydantic's encoder wrote for the same job, before orjson wrote them.
    assert serializer(message) == pydantic_core.to_json(message)
    read = deserialize_job(job.data, deserializer=deserializer)
    event = EventMessage.model_validate(read.args[0])
    assert event.event_id == uuid.UUID(event_id)
    assert (event.webhook_id, event.project_id) == (webhook_id, project_id)
    assert event.received_at == EPOCH + dt.timedelta(microseconds=1_700_000_000_123_456)
    assert event.raw_body == b"{}"
