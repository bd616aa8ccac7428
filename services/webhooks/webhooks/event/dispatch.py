"""Requesting a snapshot run from tracking: ``POST /api/v1/pipeline_snapshots/{id}/runs``
(the reference's path and ``PipelineSnapshotRunRequest`` body), authenticated with this
service's client-credentials token and keyed by the execution id (``Idempotency-Key``),
so a retried request never starts a second run."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

# Answers worth retrying: tracking (or the way to it) is overloaded or down.
TRANSIENT = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_ERROR = 4096


class TransientDispatchError(Exception):
    """Tracking could not take the request now; the event is retried later."""


@dataclass(frozen=True)
class RunRequested:
    """Tracking's answer: the run it started, or why it refused (a lasting refusal)."""

    run_id: uuid.UUID | None
    error: str | None = None


class SnapshotRunner(Protocol):
    async def run(
        self, snapshot_id: uuid.UUID, run_configuration: dict[str, Any] | None, key: uuid.UUID
    ) -> RunRequested: ...


class TrackingSnapshotRunner:
    def __init__(self, http: httpx.AsyncClient, tracking_url: str, auth: httpx.Auth | None) -> None:
        self._http = http
        self._url = tracking_url.rstrip("/") + "/api/v1/pipeline_snapshots/{}/runs"
        self._auth = auth

    async def run(
        self, snapshot_id: uuid.UUID, run_configuration: dict[str, Any] | None, key: uuid.UUID
    ) -> RunRequested:
        try:
            response = await self._http.post(
                self._url.format(snapshot_id),
                json={"run_configuration": run_configuration},
                headers={"Idempotency-Key": str(key)},
                auth=self._auth or httpx.USE_CLIENT_DEFAULT,
            )
        except httpx.HTTPError as exc:
            raise TransientDispatchError(f"tracking unreachable: {exc!r}") from exc
        if response.status_code in TRANSIENT:
            raise TransientDispatchError(f"tracking answered {response.status_code}")
        if response.is_success:
            try:
                run_id = uuid.UUID(str(response.json().get("id")))
            except (ValueError, AttributeError):
                run_id = None
            return RunRequested(run_id)
        detail = response.text[:MAX_ERROR]
        return RunRequested(None, f"tracking answered {response.status_code}: {detail}")
