"""Requesting a snapshot run from tracking: ``POST /api/v1/pipeline_snapshots/{id}/runs``
(the reference's path and ``PipelineSnapshotRunRequest`` body, plus the trigger execution
asking), authenticated with this service's client-credentials token. Tracking starts at
most one run per trigger execution id, however often it is asked, so a retried request
never starts a second run (the id is also sent as ``Idempotency-Key``).

A 401 or 403 answer is about that token, not about the event: the token is dropped, the
next try logs in for a new one, and the event is retried like any transient failure."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from shared.http import CachedTokenAuth

# Answers worth retrying besides any 5xx: a timeout, too early, too many requests.
TRANSIENT_4XX = frozenset({408, 425, 429})
# Answers about the worker's credential rather than the event: its token expired, was
# revoked or could not be checked, or tracking does not (yet) let this service run
# snapshots (SNAPSHOT_RUN_CLIENTS). Each is mended outside the event.
CREDENTIAL_REFUSED = frozenset({401, 403})
MAX_ERROR = 4096


def transient(response: httpx.Response) -> bool:
    """Whether tracking's answer is worth asking again later: any 5xx, 408, 425, 429,
    401 and 403 (the worker's credential refused, see ``CREDENTIAL_REFUSED``), and a 409
    that says when to ask again (``Retry-After``: tracking is still running this
    execution's earlier request under the same ``Idempotency-Key``, and asked again it
    answers with that request's run). Any other 4xx is a lasting refusal: the snapshot
    is unknown or deleted, the request is bad, a 409 without ``Retry-After`` (the
    snapshot's run name template gave a name another run has)."""
    status = response.status_code
    return (
        status >= 500
        or status in TRANSIENT_4XX
        or status in CREDENTIAL_REFUSED
        or (status == 409 and "retry-after" in response.headers)
    )


class TransientDispatchError(Exception):
    """Tracking could not take the request now; the event is retried later."""


@dataclass(frozen=True)
class RunRequested:
    """Tracking's answer: the run it started, or why it refused (a lasting refusal)."""

    run_id: uuid.UUID | None
    error: str | None = None


@dataclass(frozen=True)
class UpstreamEvent:
    """The webhook event a trigger execution reacts to (the reference's
    ``WebhookTriggerExecutionInfo``, keyed by webhook type)."""

    webhook_type: str
    webhook_id: uuid.UUID
    delivery_id: str
    event_type: str | None
    event: dict[str, Any] | None  # as the trigger matched it

    def trigger_execution(
        self, execution_id: uuid.UUID, trigger_id: uuid.UUID | None
    ) -> dict[str, Any]:
        """The request's ``trigger_execution``: who asks, and what the run records."""
        return {
            "id": str(execution_id),
            "trigger_id": str(trigger_id) if trigger_id is not None else None,
            "webhook_upstream_event": {
                self.webhook_type: {
                    "webhook_id": str(self.webhook_id),
                    "delivery_id": self.delivery_id,
                    "event_type": self.event_type,
                    "event": self.event,
                }
            },
        }


class SnapshotRunner(Protocol):
    async def run(
        self,
        snapshot_id: uuid.UUID,
        run_configuration: dict[str, Any] | None,
        trigger_execution: dict[str, Any],
    ) -> RunRequested:
        """Ask for the run; ``trigger_execution["id"]`` keys it (one run per id)."""
        ...


class TrackingSnapshotRunner:
    def __init__(self, http: httpx.AsyncClient, tracking_url: str, auth: httpx.Auth | None) -> None:
        self._http = http
        self._url = tracking_url.rstrip("/") + "/api/v1/pipeline_snapshots/{}/runs"
        self._auth = auth

    async def run(
        self,
        snapshot_id: uuid.UUID,
        run_configuration: dict[str, Any] | None,
        trigger_execution: dict[str, Any],
    ) -> RunRequested:
        body = {"run_configuration": run_configuration, "trigger_execution": trigger_execution}
        try:
            response = await self._http.post(
                self._url.format(snapshot_id),
                json=body,
                headers={"Idempotency-Key": trigger_execution["id"]},
                auth=self._auth or httpx.USE_CLIENT_DEFAULT,
            )
        except httpx.HTTPError as exc:
            raise TransientDispatchError(f"tracking unreachable: {exc!r}") from exc
        if response.is_success:
            try:
                run_id = uuid.UUID(str(response.json().get("id")))
            except (ValueError, AttributeError):
                run_id = None
            return RunRequested(run_id)
        answer = f"{response.status_code}: {response.text[:MAX_ERROR]}"
        if response.status_code in CREDENTIAL_REFUSED:
            self._forget_token(response.request)
            raise TransientDispatchError(f"tracking refused the worker's credentials with {answer}")
        if transient(response):
            raise TransientDispatchError(f"tracking answered {answer}")
        return RunRequested(None, f"tracking answered {answer}")

    def _forget_token(self, request: httpx.Request) -> None:
        """Drop the token ``request`` was refused with (after a 401, already the new one
        the auth flow tried it again with), so that the next try logs in afresh."""
        if isinstance(self._auth, CachedTokenAuth):
            sent = request.headers.get("authorization", "")
            self._auth.forget(sent.removeprefix("Bearer "))
