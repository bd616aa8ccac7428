"""A storm of bad signatures, sender retries and replays (security.md §5, scenarios 5 and 6,
at CI size): GitHub-, Slack- and Standard Webhooks-style senders, all at once, in a random
order. Every invalid request gets its documented 4xx and nothing is queued for it; the
per-reason counters equal what was sent; each valid delivery, sent three times at once
with fresh timestamps and signatures, re-sent as an attacker would (unsigned delivery
headers changed or dropped) and replayed after it ran, runs its trigger's snapshot exactly
once."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import random
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from arq.constants import job_key_prefix

from tests.support.asgi import LifespanApp
from tests.webhooks.support import (
    SnapshotRuns,
    chat_event_body,
    chat_headers,
    codehost_headers,
    push_body,
    standard_webhooks_headers,
)
from webhooks.settings import Settings

VALID = 12  # distinct deliveries per provider
COPIES = 3  # each sent this many times at once (fresh timestamps and signatures)
MAX_BODY = 64 * 1024
# Out of the ±300 s window by more than the storm takes to send (it is all signed first);
# the window's edges have tests of their own.
STALE = 330


@pytest.fixture
def webhooks_settings(webhooks_settings: Settings) -> Settings:
    return webhooks_settings.model_copy(update={"max_body_size": MAX_BODY})


@dataclass(frozen=True)
class Sent:
    provider: str
    body: bytes
    headers: dict[str, str]
    status: int  # what the specification answers
    reason: str  # "accepted", "auth_failed", "invalid_payload" or "too_large"


def flip(signature: str) -> str:
    """The same signature with its last character changed."""
    return signature[:-1] + ("0" if signature[-1] != "0" else "1")


class Codehost:
    """GitHub: `X-Hub-Signature-256: sha256=<hex>` over the body, no timestamp."""

    name, ok = "codehost", 202

    def __init__(self, secret: str) -> None:
        self.secret = secret

    def body(self, n: int) -> bytes:
        return push_body(branch="main", actor=f"user-{n}")

    def sign(self, body: bytes, delivery: str, *, secret: str | None = None) -> dict[str, str]:
        return codehost_headers(secret or self.secret, body, delivery=delivery)

    def bad(self, body: bytes, delivery: str) -> list[dict[str, str]]:
        good = self.sign(body, delivery)
        signature = good["X-Hub-Signature-256"]
        return [
            self.sign(body, delivery, secret="wrong"),
            good | {"X-Hub-Signature-256": flip(signature)},
            good | {"X-Hub-Signature-256": signature[:-8]},
            good | {"X-Hub-Signature-256": signature.removeprefix("sha256=")},
            good | {"X-Hub-Signature-256": "sha1=" + signature.removeprefix("sha256=")},
            {k: v for k, v in good.items() if k != "X-Hub-Signature-256"},
        ]

    def resent(self, headers: dict[str, str]) -> list[dict[str, str]]:
        """A captured delivery sent again: the delivery header is not signed, so a replay
        may carry a new one, or none."""
        return [
            headers | {"X-GitHub-Delivery": str(uuid.uuid4())},
            {k: v for k, v in headers.items() if k != "X-GitHub-Delivery"},
        ]


class Chat:
    """Slack: `v0=<hex>` over `v0:{ts}:{body}`, the timestamp within ±300 s."""

    name, ok = "chat", 200

    def __init__(self, secret: str) -> None:
        self.secret = secret

    def body(self, n: int) -> bytes:
        return chat_event_body(event_id=f"Ev{n:04d}{uuid.uuid4().hex[:6]}")

    def sign(
        self, body: bytes, delivery: str, *, secret: str | None = None, age: int = 0
    ) -> dict[str, str]:
        return chat_headers(secret or self.secret, body, int(time.time()) - age)

    def bad(self, body: bytes, delivery: str) -> list[dict[str, str]]:
        good = self.sign(body, delivery)
        signature = good["X-Slack-Signature"]
        return [
            self.sign(body, delivery, secret="wrong"),
            good | {"X-Slack-Signature": flip(signature)},
            good | {"X-Slack-Signature": signature[:-8]},
            good | {"X-Slack-Signature": "v1=" + signature.removeprefix("v0=")},
            self.sign(body, delivery, age=STALE),
            self.sign(body, delivery, age=-STALE),
            good | {"X-Slack-Request-Timestamp": "yesterday"},
            {k: v for k, v in good.items() if k != "X-Slack-Signature"},
        ]

    def resent(self, headers: dict[str, str]) -> list[dict[str, str]]:
        """The event id is in the signed body; what else a replay may add is not signed."""
        return [headers | {"X-Slack-Retry-Num": "1", "X-Webhook-Delivery": str(uuid.uuid4())}]


class StandardWebhooks:
    """Svix and the like: `webhook-signature: v1,<b64>` over `{id}.{ts}.{body}`, ±300 s,
    signed by the Standard Webhooks library itself."""

    name, ok = "custom", 202

    def __init__(self, secret: str) -> None:
        self.secret = secret

    def body(self, n: int) -> bytes:
        return json.dumps({"type": "invoice.paid", "data": {"n": n}}).encode()

    def sign(
        self, body: bytes, delivery: str, *, secret: str | None = None, age: int = 0
    ) -> dict[str, str]:
        return standard_webhooks_headers(
            secret or self.secret, delivery, body, int(time.time()) - age
        )

    def bad(self, body: bytes, delivery: str) -> list[dict[str, str]]:
        good = self.sign(body, delivery)
        signature = good["webhook-signature"]
        other = "whsec_" + base64.b64encode(os.urandom(32)).decode()
        return [
            self.sign(body, delivery, secret=other),
            good | {"webhook-signature": flip(signature.rstrip("="))},
            good | {"webhook-signature": signature[:12]},
            good | {"webhook-signature": "v1a," + signature.removeprefix("v1,")},
            self.sign(body, delivery, age=STALE),
            self.sign(body, delivery, age=-STALE),
            good | {"webhook-id": "msg.with.dots"},
        ]

    def resent(self, headers: dict[str, str]) -> list[dict[str, str]]:
        """The signed ``webhook-id`` names the message; a delivery header is not signed."""
        return [
            headers | {"X-Webhook-Delivery": str(uuid.uuid4())},
            headers | {"X-ZenML-Delivery": str(uuid.uuid4())},
        ]


Sender = Codehost | Chat | StandardWebhooks


def storm(senders: list[Sender]) -> tuple[list[Sent], dict[str, list[Sent]]]:
    """Every request of the storm, shuffled, and the valid deliveries of each provider."""
    sent: list[Sent] = []
    valid: dict[str, list[Sent]] = {}
    for sender in senders:
        for n in range(VALID):
            body = sender.body(n)
            delivery = f"{sender.name}-{n}-{uuid.uuid4().hex[:8]}"
            # Three sends of one delivery: fresh timestamps and signatures, as senders retry.
            copies = [
                Sent(sender.name, body, sender.sign(body, delivery), sender.ok, "accepted")
                for _ in range(COPIES)
            ]
            sent += copies
            # And as an attacker replays a capture: with unsigned headers changed.
            sent += [
                Sent(sender.name, body, headers, sender.ok, "accepted")
                for headers in sender.resent(copies[0].headers)
            ]
            valid.setdefault(sender.name, []).append(copies[0])
            if n < 3:  # a few deliveries' worth of every invalid variant
                sent += [
                    Sent(sender.name, body, headers, 401, "auth_failed")
                    for headers in sender.bad(body, delivery)
                ]
        # Signed, but no payload the provider can use; and one byte over the size cap.
        unusable = b'{"not": "closed"'
        sent.append(
            Sent(sender.name, unusable, sender.sign(unusable, "x-1"), 400, "invalid_payload")
        )
        oversized = b'{"pad": "' + b"x" * (MAX_BODY - 10) + b'"}'
        assert len(oversized) == MAX_BODY + 1
        sent.append(Sent(sender.name, oversized, sender.sign(oversized, "x-2"), 413, "too_large"))
    random.Random(5).shuffle(sent)
    return sent, valid


async def test_a_storm_of_forgeries_retries_and_replays(
    client: httpx.AsyncClient,
    auth: dict[str, str],
    create_webhook: Callable[..., Awaitable[dict[str, Any]]],
    project: dict[str, Any],
    snapshot_runs: SnapshotRuns,
    drain: Callable[..., Awaitable[None]],
    webhooks_app: LifespanApp,
) -> None:
    hooks: dict[str, dict[str, Any]] = {}
    triggers: dict[str, dict[str, Any]] = {}
    targets = {
        "codehost": [{"type": "push", "branch": "main"}],
        "chat": [{"type": "app_mention"}],
        "custom": [],
    }
    sw_secret = "whsec_" + base64.b64encode(os.urandom(24)).decode()
    for name in targets:
        fields = {"secret": sw_secret} if name == "custom" else {}
        hooks[name] = await create_webhook(name, **fields)
        created = await client.post(
            "/api/v1/webhook_triggers",
            json={
                "project": project["id"],
                "name": f"on-{name}",
                "webhook_id": hooks[name]["id"],
                "snapshot_id": str(uuid.uuid4()),
                "configuration": {"target_events": targets[name]},
            },
            headers=auth,
        )
        assert created.status_code == 200, created.text
        triggers[name] = created.json()
    senders: list[Sender] = [
        Codehost(hooks["codehost"]["secret"]),
        Chat(hooks["chat"]["secret"]),
        StandardWebhooks(sw_secret),
    ]
    sent, valid = storm(senders)

    def post(item: Sent) -> Awaitable[httpx.Response]:
        path = f"/api/v1/webhooks/{item.provider}/{hooks[item.provider]['id']}/events"
        return client.post(path, content=item.body, headers=item.headers)

    answers = await asyncio.gather(*(post(item) for item in sent))
    wrong = [
        (item.provider, item.reason, answer.status_code, answer.text)
        for item, answer in zip(sent, answers, strict=True)
        if answer.status_code != item.status
    ]
    assert wrong == [], "\n".join(map(str, wrong))

    # The counters equal what was sent, reason by reason; a body over the cap never
    # reached the intake.
    for name, hook in hooks.items():
        reasons = Counter(item.reason for item in sent if item.provider == name)
        response = await client.get(f"/api/v1/webhooks/{hook['id']}", headers=auth)
        stats = response.json()["metadata"]["stats"]
        counted = reasons["accepted"] + reasons["auth_failed"] + reasons["invalid_payload"]
        assert stats["received_count"] == counted, name
        assert stats["accepted_count"] == reasons["accepted"] > COPIES * VALID, name
        assert stats["auth_failed_count"] == reasons["auth_failed"], name
        assert stats["invalid_payload_count"] == reasons["invalid_payload"] == 1, name

    # One job per valid delivery, nothing for the rest.
    settings: Settings = webhooks_app.state["settings"]
    redis = webhooks_app.state["redis"]
    assert await redis.zcard(settings.queue_name) == len(hooks) * VALID

    await drain()
    await assert_ran_once(client, auth, triggers, snapshot_runs)

    # Replays of every valid delivery after it ran, as captured and with unsigned headers
    # changed: answered, absorbed, nothing runs again.
    by_name = {sender.name: sender for sender in senders}
    replays = [
        Sent(item.provider, item.body, headers, item.status, "accepted")
        for items in valid.values()
        for item in items
        for headers in [item.headers, *by_name[item.provider].resent(item.headers)]
    ]
    answers = await asyncio.gather(*(post(item) for item in replays))
    assert [a.status_code for a in answers] == [item.status for item in replays]
    assert await redis.zcard(settings.queue_name) == 0
    await drain()
    await assert_ran_once(client, auth, triggers, snapshot_runs)


async def assert_ran_once(
    client: httpx.AsyncClient,
    auth: dict[str, str],
    triggers: dict[str, dict[str, Any]],
    snapshot_runs: SnapshotRuns,
) -> None:
    """Each trigger has one dispatched execution per valid delivery, and tracking was
    asked once for each."""
    for name, trigger in triggers.items():
        response = await client.get(
            f"/api/v1/webhook_triggers/{trigger['id']}/executions",
            params={"size": 100},
            headers=auth,
        )
        assert response.status_code == 200, response.text
        executions = response.json()["items"]
        assert len(executions) == VALID, name
        assert len({e["delivery_id"] for e in executions}) == VALID, name
        assert {e["status"] for e in executions} == {"dispatched"}, name
    assert len(snapshot_runs.runs) == len(triggers) * VALID
    assert Counter(call["key"] for call in snapshot_runs.calls).most_common(1)[0][1] == 1


async def test_a_github_capture_resent_after_the_window_runs_its_trigger_once(
    client: httpx.AsyncClient,
    auth: dict[str, str],
    wired: tuple[dict[str, Any], dict[str, Any]],
    snapshot_runs: SnapshotRuns,
    drain: Callable[..., Awaitable[None]],
    webhooks_app: LifespanApp,
) -> None:
    """Past the replay window the intake queues the capture again, but its event id is
    derived from the body it signed, not from the new delivery header: the worker finds
    the event it processed and runs nothing again."""
    hook, trigger = wired
    path = f"/api/v1/webhooks/codehost/{hook['id']}/events"
    body = push_body(actor="mallory")
    captured = codehost_headers(hook["secret"], body, delivery="genuine")
    assert (await client.post(path, content=body, headers=captured)).status_code == 202
    redis = webhooks_app.state["redis"]
    settings: Settings = webhooks_app.state["settings"]
    (job_id,) = await redis.zrange(settings.queue_name, 0, -1)
    await drain()
    assert len(snapshot_runs.runs) == 1
    # The window over: the marker is gone, and the capture comes back with a new header.
    assert await redis.delete(job_key_prefix + job_id.decode()) == 1
    resent = captured | {"X-GitHub-Delivery": "forged"}
    assert (await client.post(path, content=body, headers=resent)).status_code == 202
    assert await redis.zcard(settings.queue_name) == 1
    await drain()
    assert len(snapshot_runs.runs) == 1
    response = await client.get(
        f"/api/v1/webhook_triggers/{trigger['id']}/executions", headers=auth
    )
    (execution,) = response.json()["items"]
    assert (execution["delivery_id"], execution["status"]) == ("genuine", "dispatched")
