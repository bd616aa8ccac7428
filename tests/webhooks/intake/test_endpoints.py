"""The intake route: every status code of the specification, the stats, the replay
window and the hand-off to the queue (which must hold the event before the answer)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import time
import uuid
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from arq.constants import job_key_prefix

from shared.db import session_scope
from tests.support.asgi import LifespanApp
from tests.support.redis_server import free_port
from tests.webhooks.support import (
    chat_event_body,
    chat_headers,
    codehost_headers,
    custom_headers,
    deliver_through,
    push_body,
    standard_webhooks_headers,
    tasks_headers,
)
from webhooks.event.queue import EVENT_NAMESPACE
from webhooks.models import Webhook
from webhooks.settings import Settings


def intake(webhook: dict[str, Any], provider: str | None = None) -> str:
    kind = provider or webhook["body"]["webhook_type"]
    return f"/api/v1/webhooks/{kind}/{webhook['id']}/events"


async def stats_of(
    client: httpx.AsyncClient, auth: dict[str, str], webhook_id: str
) -> dict[str, Any]:
    response = await client.get(f"/api/v1/webhooks/{webhook_id}", headers=auth)
    assert response.status_code == 200, response.text
    stats: dict[str, Any] = response.json()["metadata"]["stats"]
    return stats


async def queued(app: LifespanApp) -> int:
    settings: Settings = app.state["settings"]
    count: int = await app.state["redis"].zcard(settings.queue_name)
    return count


async def queued_events(app: LifespanApp) -> list[dict[str, Any]]:
    """The events of the jobs waiting in the queue, oldest first."""
    settings: Settings = app.state["settings"]
    redis = app.state["redis"]
    events = []
    for job_id in await redis.zrange(settings.queue_name, 0, -1):
        job = json.loads(await redis.get(job_key_prefix + job_id.decode()))
        assert job["f"] == "process_event"
        events.append(job["a"][0])
    return events


async def test_unknown_provider_answers_404(client):
    response = await client.post(f"/api/v1/webhooks/jira/{uuid.uuid4()}/events", content=b"{}")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


async def test_a_webhook_id_that_is_no_uuid_answers_422(client):
    response = await client.post("/api/v1/webhooks/custom/nope/events", content=b"{}")
    assert response.status_code == 422


async def test_missing_codehost_event_header_answers_400_before_lookup(client):
    response = await client.post(f"/api/v1/webhooks/codehost/{uuid.uuid4()}/events", content=b"{}")
    assert response.status_code == 400
    assert response.json() == {"detail": "Missing required X-Codehost-Event header."}


async def test_unsupported_codehost_event_answers_202_before_lookup(
    client, auth, create_webhook, webhooks_app
):
    hook = await create_webhook("codehost")
    unknown = f"/api/v1/webhooks/codehost/{uuid.uuid4()}/events"
    for path in (unknown, intake(hook)):
        response = await client.post(path, content=b"{}", headers={"X-GitHub-Event": "ping"})
        assert response.status_code == 202
        assert response.content == b""
    assert (await stats_of(client, auth, hook["id"]))["received_count"] == 0
    assert await queued(webhooks_app) == 0


async def test_unknown_webhook_answers_404(client):
    body = push_body()
    response = await client.post(
        f"/api/v1/webhooks/codehost/{uuid.uuid4()}/events",
        content=body,
        headers=codehost_headers("whatever", body),
    )
    assert response.status_code == 404


async def test_provider_differing_from_the_stored_type_answers_404_without_stats(
    client, auth, create_webhook
):
    hook = await create_webhook("custom")
    body = push_body()
    response = await client.post(
        intake(hook, "codehost"), content=body, headers=codehost_headers(hook["secret"], body)
    )
    assert response.status_code == 404
    assert (await stats_of(client, auth, hook["id"]))["received_count"] == 0


async def test_signed_codehost_delivery_answers_202_and_counts_as_accepted(
    client, auth, create_webhook, webhooks_app
):
    hook = await create_webhook("codehost")
    body = push_body()
    response = await client.post(
        intake(hook), content=body, headers=codehost_headers(hook["secret"], body)
    )
    assert response.status_code == 202
    assert response.content == b""
    stats = await stats_of(client, auth, hook["id"])
    assert stats["received_count"] == stats["accepted_count"] == 1
    assert stats["auth_failed_count"] == stats["invalid_payload_count"] == 0
    assert stats["last_received_at"] == stats["last_accepted_at"] is not None
    assert stats["last_error_at"] is None
    assert await queued(webhooks_app) == 1


async def test_accepted_event_is_queued_with_its_raw_body_before_the_answer(
    client, create_webhook, webhooks_app
):
    hook = await create_webhook("codehost")
    body = push_body()
    headers = codehost_headers(hook["secret"], body, delivery="d-1")
    response = await client.post(intake(hook), content=body, headers=headers)
    assert response.status_code == 202
    (event,) = await queued_events(webhooks_app)
    assert event["delivery_id"] == "d-1"
    assert event["event_type"] == "push"
    assert event["webhook_id"] == hook["id"]
    assert base64.b64decode(event["body"]) == body


async def test_bad_signature_answers_401_and_counts_an_auth_failure(
    client, auth, create_webhook, webhooks_app
):
    hook = await create_webhook("codehost")
    body = push_body()
    response = await client.post(intake(hook), content=body, headers=codehost_headers("x", body))
    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid webhook authentication."}
    stats = await stats_of(client, auth, hook["id"])
    assert (stats["received_count"], stats["auth_failed_count"], stats["accepted_count"]) == (
        1,
        1,
        0,
    )
    assert stats["last_error_summary"] == "Invalid webhook signature."
    assert stats["last_error_at"] is not None
    assert await queued(webhooks_app) == 0


async def deactivate(client, auth, hook) -> None:
    response = await client.put(
        f"/api/v1/webhooks/{hook['id']}", json={"active": False}, headers=auth
    )
    assert response.status_code == 200, response.text


async def test_inactive_webhook_answers_409_to_a_good_signature_without_stats(
    client, auth, create_webhook, webhooks_app
):
    hook = await create_webhook("codehost")
    await deactivate(client, auth, hook)
    body = push_body()
    response = await client.post(
        intake(hook), content=body, headers=codehost_headers(hook["secret"], body)
    )
    assert response.status_code == 409
    assert response.json() == {"detail": "Webhook is inactive."}
    assert (await stats_of(client, auth, hook["id"]))["received_count"] == 0
    assert await queued(webhooks_app) == 0


async def test_inactive_webhook_answers_401_to_a_bad_signature_without_stats(
    client, auth, create_webhook
):
    hook = await create_webhook("codehost")
    await deactivate(client, auth, hook)
    body = push_body()
    response = await client.post(intake(hook), content=body, headers=codehost_headers("x", body))
    assert response.status_code == 401
    assert (await stats_of(client, auth, hook["id"]))["received_count"] == 0


async def test_reactivated_webhook_accepts_again_at_once(client, auth, create_webhook):
    hook = await create_webhook("codehost")
    await deactivate(client, auth, hook)
    body = push_body()
    headers = codehost_headers(hook["secret"], body)
    assert (await client.post(intake(hook), content=body, headers=headers)).status_code == 409
    response = await client.put(
        f"/api/v1/webhooks/{hook['id']}", json={"active": True}, headers=auth
    )
    assert response.status_code == 200
    assert (await client.post(intake(hook), content=body, headers=headers)).status_code == 202


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "Request body must be valid JSON."),
        (b"[1, 2]", "Request body must contain a top-level JSON object."),
        (b'"text"', "Request body must contain a top-level JSON object."),
    ],
)
async def test_unusable_body_answers_400_and_counts_an_invalid_payload(
    client, auth, create_webhook, webhooks_app, body, message
):
    hook = await create_webhook("codehost")
    response = await client.post(
        intake(hook), content=body, headers=codehost_headers(hook["secret"], body)
    )
    assert response.status_code == 400
    assert response.json() == {"detail": message}
    stats = await stats_of(client, auth, hook["id"])
    assert (stats["received_count"], stats["invalid_payload_count"]) == (1, 1)
    assert stats["last_error_summary"] == message
    assert await queued(webhooks_app) == 0


async def test_custom_delivery_without_an_event_header_counts_as_invalid_payload(
    client, auth, create_webhook
):
    hook = await create_webhook("custom")
    body = b'{"a": 1}'
    headers = custom_headers(hook["secret"], body)
    del headers["X-ZenML-Event"]
    response = await client.post(intake(hook), content=body, headers=headers)
    assert response.status_code == 400
    assert response.json() == {"detail": "Missing required x-zenml-event header."}
    assert (await stats_of(client, auth, hook["id"]))["invalid_payload_count"] == 1


@pytest.mark.parametrize(
    ("webhook_type", "body", "sign", "status"),
    [
        ("custom", b'{"build": 7}', custom_headers, 202),
        (
            "tasks",
            b'{"webhook_id": "w", "event": "taskCreated", "task_id": "t"}',
            tasks_headers,
            202,
        ),
        ("chat", chat_event_body(), chat_headers, 200),
    ],
)
async def test_signed_delivery_is_queued_with_the_providers_answer(
    client, create_webhook, webhooks_app, webhook_type, body, sign, status
):
    hook = await create_webhook(webhook_type)
    response = await client.post(intake(hook), content=body, headers=sign(hook["secret"], body))
    assert response.status_code == status
    assert response.content == b""
    assert await queued(webhooks_app) == 1


async def test_form_encoded_codehost_delivery_is_accepted(client, create_webhook, webhooks_app):
    hook = await create_webhook("codehost")
    body = urlencode({"payload": push_body().decode()}).encode()
    headers = codehost_headers(hook["secret"], body)
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    response = await client.post(intake(hook), content=body, headers=headers)
    assert response.status_code == 202
    assert await queued(webhooks_app) == 1


async def test_chat_url_verification_answers_the_challenge_and_queues_nothing(
    client, auth, create_webhook, webhooks_app
):
    hook = await create_webhook("chat")
    body = b'{"type": "url_verification", "token": "t", "challenge": "3eZbrw1aB"}'
    response = await client.post(
        intake(hook), content=body, headers=chat_headers(hook["secret"], body)
    )
    assert response.status_code == 200
    assert response.text == "3eZbrw1aB"
    assert response.headers["content-type"].startswith("text/plain")
    assert await queued(webhooks_app) == 0
    assert (await stats_of(client, auth, hook["id"]))["accepted_count"] == 1


async def test_chat_rate_limit_notice_answers_200_and_queues_nothing(
    client, create_webhook, webhooks_app
):
    hook = await create_webhook("chat")
    body = json.dumps(
        {"type": "app_rate_limited", "team_id": "T1", "api_app_id": "A1", "minute_rate_limited": 1}
    ).encode()
    response = await client.post(
        intake(hook), content=body, headers=chat_headers(hook["secret"], body)
    )
    assert response.status_code == 200
    assert response.content == b""
    assert await queued(webhooks_app) == 0


async def test_chat_delivery_signed_six_minutes_ago_answers_401(client, auth, create_webhook):
    hook = await create_webhook("chat")
    body = chat_event_body()
    headers = chat_headers(hook["secret"], body, timestamp=int(time.time()) - 360)
    response = await client.post(intake(hook), content=body, headers=headers)
    assert response.status_code == 401
    stats = await stats_of(client, auth, hook["id"])
    assert (
        stats["last_error_summary"] == "Slack request timestamp is outside the allowed tolerance."
    )


async def test_chat_unsupported_delivery_type_answers_400(client, create_webhook):
    hook = await create_webhook("chat")
    body = b'{"type": "block_actions"}'
    response = await client.post(
        intake(hook), content=body, headers=chat_headers(hook["secret"], body)
    )
    assert response.status_code == 400
    assert response.json() == {"detail": "Unsupported Slack delivery type."}


async def test_tasks_delivery_without_its_webhook_id_answers_400(client, create_webhook):
    hook = await create_webhook("tasks")
    body = b'{"event": "taskCreated"}'
    response = await client.post(
        intake(hook), content=body, headers=tasks_headers(hook["secret"], body)
    )
    assert response.status_code == 400
    assert response.json() == {"detail": "Missing or empty ClickUp 'webhook_id' field."}


async def test_replayed_delivery_id_is_absorbed_not_queued_twice(
    client, auth, create_webhook, webhooks_app
):
    hook = await create_webhook("codehost")
    body = push_body()
    for _ in range(3):
        headers = codehost_headers(hook["secret"], body, delivery="same-delivery")
        response = await client.post(intake(hook), content=body, headers=headers)
        assert response.status_code == 202
    assert await queued(webhooks_app) == 1
    stats = await stats_of(client, auth, hook["id"])
    assert (stats["received_count"], stats["accepted_count"]) == (3, 3)


async def test_chat_retries_of_one_event_id_are_absorbed(client, create_webhook, webhooks_app):
    hook = await create_webhook("chat")
    body = chat_event_body(event_id="Ev-retried")
    for _ in range(2):
        response = await client.post(
            intake(hook), content=body, headers=chat_headers(hook["secret"], body)
        )
        assert response.status_code == 200
    assert await queued(webhooks_app) == 1


async def test_a_standard_webhooks_sender_and_its_retry_make_one_event(
    client, auth, create_webhook, webhooks_app
):
    """A Svix-style sender, signing with the Standard Webhooks library and a ``whsec_``
    secret shown unpadded; its retry carries the same ``webhook-id`` with a new timestamp
    and signature. The event type comes from the body's ``type``."""
    secret = "whsec_" + base64.b64encode(os.urandom(32)).decode().rstrip("=")
    hook = await create_webhook("custom", secret=secret)
    body = json.dumps({"type": "invoice.paid", "data": {"id": "in_1"}}).encode()
    now = int(time.time())
    for sent_at in (now - 60, now):
        headers = standard_webhooks_headers(secret, "msg_2Lc7Yx", body, sent_at)
        response = await client.post(intake(hook), content=body, headers=headers)
        assert response.status_code == 202, response.text
    (event,) = await queued_events(webhooks_app)
    assert (event["delivery_id"], event["event_type"]) == ("msg_2Lc7Yx", "invoice.paid")
    stats = await stats_of(client, auth, hook["id"])
    assert (stats["received_count"], stats["accepted_count"]) == (2, 2)


async def test_an_unsigned_delivery_header_does_not_rename_a_standard_webhooks_message(
    client, auth, create_webhook, webhooks_app
):
    """The signed ``webhook-id`` names the message: a replay of it with an
    ``X-Webhook-Delivery`` (or the reference's ``X-ZenML-Delivery``) added is absorbed."""
    secret = "whsec_" + base64.b64encode(os.urandom(32)).decode()
    hook = await create_webhook("custom", secret=secret)
    body = json.dumps({"type": "invoice.paid", "data": {"id": "in_2"}}).encode()
    headers = standard_webhooks_headers(secret, "msg_signed", body)
    for added in ({}, {"X-Webhook-Delivery": "other-1"}, {"X-ZenML-Delivery": "other-2"}):
        response = await client.post(intake(hook), content=body, headers=headers | added)
        assert response.status_code == 202, response.text
    (event,) = await queued_events(webhooks_app)
    assert event["delivery_id"] == "msg_signed"
    stats = await stats_of(client, auth, hook["id"])
    assert (stats["received_count"], stats["accepted_count"]) == (3, 3)


def without(headers: dict[str, str], name: str) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() != name.lower()}


@pytest.mark.parametrize(
    ("webhook_type", "sign", "delivery_header", "event_header"),
    [
        ("codehost", codehost_headers, "X-GitHub-Delivery", ("X-GitHub-Event", "release")),
        ("custom", custom_headers, "X-ZenML-Delivery", ("X-ZenML-Event", "build.other")),
    ],
)
async def test_a_capture_resent_with_a_new_delivery_header_or_none_is_absorbed(
    client, auth, create_webhook, webhooks_app, webhook_type, sign, delivery_header, event_header
):
    """The signature covers the body alone, so the body names the event: the same body and
    signature sent again is a replay, whatever delivery (or event) header it carries or
    lacks. The event keeps the first delivery's id and type for consumers."""
    hook = await create_webhook(webhook_type)
    body = push_body(actor="carol")
    headers = sign(hook["secret"], body, delivery="d-first")
    resent = [
        headers,
        headers | {delivery_header: "d-second"},
        headers | {"X-Webhook-Delivery": "d-third", "X-Codehost-Delivery": "d-fourth"},
        without(headers, delivery_header),
        headers | dict([event_header]) | {delivery_header: "d-fifth"},
    ]
    for sent in resent:
        response = await client.post(intake(hook), content=body, headers=sent)
        assert response.status_code == 202, response.text
    (event,) = await queued_events(webhooks_app)
    assert (event["delivery_id"], event["event_type"]) == ("d-first", headers[event_header[0]])
    stats = await stats_of(client, auth, hook["id"])
    assert (stats["received_count"], stats["accepted_count"]) == (5, 5)
    # Another body is another event, whatever delivery header it borrows.
    other = push_body(actor="dave")
    response = await client.post(
        intake(hook), content=other, headers=sign(hook["secret"], other, delivery="d-first")
    )
    assert response.status_code == 202
    assert await queued(webhooks_app) == 2


async def test_an_event_without_a_delivery_header_is_named_by_its_body(
    client, create_webhook, webhooks_app
):
    """Its delivery id is the body's BLAKE2b-256, and its event id derives from that, as
    every event id derives from its webhook and key (not a random id per delivery)."""
    hook = await create_webhook("codehost")
    body = push_body()
    headers = without(codehost_headers(hook["secret"], body), "X-GitHub-Delivery")
    for _ in range(2):
        assert (await client.post(intake(hook), content=body, headers=headers)).status_code == 202
    (event,) = await queued_events(webhooks_app)
    key = "blake2b:" + hashlib.blake2b(body, digest_size=32).hexdigest()
    assert event["delivery_id"] == key
    assert event["event_id"] == str(uuid.uuid5(EVENT_NAMESPACE, f"{hook['id']}:{key}"))


async def test_a_tasks_delivery_without_history_items_resent_is_absorbed(
    client, create_webhook, webhooks_app
):
    """ClickUp's key is its webhook and history item ids, in the signed body; a delivery
    without history items is named by its body (it was a random id each time)."""
    hook = await create_webhook("tasks")
    body = b'{"webhook_id": "w", "event": "taskDeleted", "task_id": "t"}'
    for _ in range(2):
        response = await client.post(
            intake(hook), content=body, headers=tasks_headers(hook["secret"], body)
        )
        assert response.status_code == 202
    assert await queued(webhooks_app) == 1


async def test_rotated_secret_stops_the_old_one_at_once(client, auth, create_webhook):
    hook = await create_webhook("codehost")
    body = push_body()
    rotated = await client.put(f"/api/v1/webhooks/{hook['id']}/secret", json={}, headers=auth)
    assert rotated.status_code == 200
    new_secret = rotated.json()["secret"]
    old = await client.post(
        intake(hook), content=body, headers=codehost_headers(hook["secret"], body)
    )
    assert old.status_code == 401
    new = await client.post(intake(hook), content=body, headers=codehost_headers(new_secret, body))
    assert new.status_code == 202


async def test_deleted_webhook_answers_404_at_once(client, auth, create_webhook):
    hook = await create_webhook("codehost")
    body = push_body()
    headers = codehost_headers(hook["secret"], body)
    assert (await client.post(intake(hook), content=body, headers=headers)).status_code == 202
    assert (await client.delete(f"/api/v1/webhooks/{hook['id']}", headers=auth)).status_code == 200
    assert (await client.post(intake(hook), content=body, headers=headers)).status_code == 404


async def test_stats_are_exact_under_concurrent_deliveries(
    client, auth, create_webhook, webhooks_app
):
    hook = await create_webhook("codehost")

    async def send(n: int) -> int:
        secret = hook["secret"] if n % 4 != 0 else "wrong"
        body = push_body(actor=f"user-{n}")  # each its own event (one body, one event)
        response = await client.post(
            intake(hook), content=body, headers=codehost_headers(secret, body)
        )
        status: int = response.status_code
        return status

    statuses = await asyncio.gather(*(send(n) for n in range(80)))
    assert statuses.count(202) == 60
    assert statuses.count(401) == 20
    stats = await stats_of(client, auth, hook["id"])
    assert (stats["received_count"], stats["accepted_count"], stats["auth_failed_count"]) == (
        80,
        60,
        20,
    )
    assert await queued(webhooks_app) == 60


async def test_body_over_the_size_limit_answers_413(webhooks_settings, router, create_webhook):
    hook = await create_webhook("codehost")
    settings = webhooks_settings.model_copy(update={"max_body_size": 2048})
    body = b'{"pad": "' + b"x" * 4096 + b'"}'
    assert (await deliver_through(settings, router, hook, body)).status_code == 413


async def test_a_delivery_as_large_as_githubs_largest_is_accepted_whole(
    client, create_webhook, webhooks_app
):
    """GitHub sends payloads up to 25 MB; the intake takes them (the other services stop
    at 10 MiB)."""
    hook = await create_webhook("codehost")
    commits = [{"id": f"{i:040x}", "message": "x" * 1000} for i in range(12_000)]
    body = json.dumps({"ref": "refs/heads/main", "commits": commits}).encode()
    assert 10 << 20 < len(body) < 25 << 20
    response = await client.post(
        intake(hook), content=body, headers=codehost_headers(hook["secret"], body)
    )
    assert response.status_code == 202, response.text
    (event,) = await queued_events(webhooks_app)
    assert base64.b64decode(event["body"]) == body


async def test_redis_unreachable_answers_503_so_the_sender_retries(
    webhooks_settings, router, create_webhook, webhooks_app
):
    hook = await create_webhook("codehost")
    dead = f"redis://127.0.0.1:{free_port()}/0"
    settings = webhooks_settings.model_copy(update={"redis_url": dead, "run_migrations": False})
    response = await deliver_through(settings, router, hook, push_body())
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    assert await queued(webhooks_app) == 0


async def test_secret_is_stored_encrypted(client, create_webhook, webhooks_app):
    hook = await create_webhook("codehost", secret="plain-text-secret-value")
    assert hook["secret"] is None
    async with session_scope(webhooks_app.state["sessionmaker"]) as session:
        row = await session.get(Webhook, uuid.UUID(hook["id"]))
    assert row is not None
    assert "plain-text-secret-value" not in row.secret_ciphertext
    body = push_body()
    headers = codehost_headers("plain-text-secret-value", body)
    assert (await client.post(intake(hook), content=body, headers=headers)).status_code == 202
