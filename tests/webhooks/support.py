"""Signing deliveries as each provider's real sender does, a host-routing transport, and
the transport-level fake of tracking's snapshot-run route."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import standardwebhooks
from arq.constants import job_key_prefix
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.support.asgi import running
from webhooks.app import create_app
from webhooks.event.queue import event_id_for
from webhooks.intake.providers.base import body_key
from webhooks.settings import Settings


def hexmac(secret: str, *parts: bytes) -> str:
    return hmac.new(secret.encode(), b"".join(parts), hashlib.sha256).hexdigest()


def codehost_headers(
    secret: str, body: bytes, event: str = "push", delivery: str | None = None
) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": "sha256=" + hexmac(secret, body),
    }


def chat_headers(secret: str, body: bytes, timestamp: int | None = None) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    return {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": "v0=" + hexmac(secret, b"v0:", ts.encode(), b":", body),
    }


def tasks_headers(secret: str, body: bytes) -> dict[str, str]:
    return {"Content-Type": "application/json", "X-Signature": hexmac(secret, body)}


def custom_headers(
    secret: str, body: bytes, event: str = "build.finished", delivery: str | None = None
) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "X-ZenML-Event": event,
        "X-ZenML-Signature-256": "sha256=" + hexmac(secret, body),
    }
    if delivery is not None:
        headers["X-ZenML-Delivery"] = delivery
    return headers


def standard_webhooks_headers(
    secret: str, msg_id: str, body: bytes, sent_at: int | None = None
) -> dict[str, str]:
    """A Standard Webhooks (Svix-style) delivery's headers, signed by the standard's own
    library with a ``whsec_`` secret, sent at ``sent_at`` (now by default)."""
    sent_at = int(time.time()) if sent_at is None else sent_at
    signature = standardwebhooks.Webhook(secret).sign(
        msg_id, datetime.fromtimestamp(sent_at, UTC), body.decode()
    )
    return {
        "Content-Type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": str(sent_at),
        "webhook-signature": signature,
    }


def job_key(webhook_id: str, key: str | None = None, *, body: bytes = b"") -> str:
    """The arq job key a delivery is queued under, and which marks it as seen (its
    tombstone once the event ran): named by ``key``, its signed delivery id, or by its
    ``body`` where the sender signs none (codehost, custom ``sha256=``)."""
    return job_key_prefix + event_id_for(webhook_id, key or body_key(body))[1]


def push_body(branch: str = "main", repo: str = "acme/app", actor: str = "alice") -> bytes:
    return json.dumps(
        {
            "ref": f"refs/heads/{branch}",
            "after": "abc123",
            "repository": {"full_name": repo},
            "sender": {"login": actor},
        }
    ).encode()


def chat_event_body(event_id: str = "Ev1", text: str = "deploy please") -> bytes:
    return json.dumps(
        {
            "type": "event_callback",
            "team_id": "T1",
            "api_app_id": "A1",
            "event_id": event_id,
            "event_time": 1700000000,
            "event": {
                "type": "app_mention",
                "user": "U1",
                "text": text,
                "channel": "C1",
                "ts": "1700000000.1",
                "event_ts": "1700000000.1",
            },
        }
    ).encode()


async def deliver_custom(
    client: httpx.AsyncClient, hook: dict[str, Any], body: bytes, delivery: str
) -> None:
    """An accepted `sha256=` delivery of ``body`` to a custom webhook, labelled
    ``delivery`` by its unsigned ``X-Webhook-Delivery``."""
    headers = {**custom_headers(hook["secret"], body), "X-Webhook-Delivery": delivery}
    response = await client.post(
        f"/api/v1/webhooks/custom/{hook['id']}/events", content=body, headers=headers
    )
    assert response.status_code == 202, response.text


async def deliver_through(
    settings: Settings, transport: httpx.AsyncBaseTransport, hook: dict[str, Any], body: bytes
) -> httpx.Response:
    """A signed codehost delivery to a second webhooks app built from ``settings`` (beside
    the test's own, on the same database): how a test changes one setting."""
    async with running(create_app(settings, http_transport=transport)) as app:
        asgi = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=asgi, base_url="http://t") as client:
            return await client.post(
                f"/api/v1/webhooks/codehost/{hook['id']}/events",
                content=body,
                headers=codehost_headers(hook["secret"], body),
            )


@dataclass
class SnapshotRuns:
    """A stand-in for tracking's ``POST /api/v1/pipeline_snapshots/{id}/runs`` that fails
    on demand: records every call and, as tracking does, starts one run per trigger
    execution (the ``Idempotency-Key`` is its id). ``fail_next`` answers that many calls
    with 503 first; ``refuse`` answers 404."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    runs: dict[str, str] = field(default_factory=dict)
    fail_next: int = 0
    refuse: bool = False

    def app(self) -> Starlette:
        async def run(request: Request) -> Response:
            try:
                body = await request.json()
            except ClientDisconnect:  # the worker was killed mid-request
                return Response(status_code=499)
            key = request.headers.get("idempotency-key", "")
            self.calls.append(
                {
                    "snapshot_id": request.path_params["snapshot_id"],
                    "key": key,
                    "authorization": request.headers.get("authorization"),
                    "body": body,
                }
            )
            if self.fail_next > 0:
                self.fail_next -= 1
                return JSONResponse({"detail": "busy"}, status_code=503)
            if self.refuse:
                return JSONResponse({"detail": ["KeyError", "no such snapshot"]}, status_code=404)
            run_id = self.runs.setdefault(key, str(uuid.uuid4()))
            return JSONResponse({"id": run_id, "name": "run"})

        async def login(request: Request) -> Response:
            return JSONResponse({"access_token": "service-token", "expires_in": 900})

        return Starlette(
            routes=[
                Route("/api/v1/pipeline_snapshots/{snapshot_id}/runs", run, methods=["POST"]),
                Route("/api/v1/login", login, methods=["POST"]),
            ]
        )
