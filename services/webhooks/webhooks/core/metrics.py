"""The webhooks service's and worker's own Prometheus metrics (beside :mod:`shared.metrics`;
names and meanings: ``docs/operations.md``)."""

from __future__ import annotations

from prometheus_client import Counter

WEBHOOK_DELIVERIES = Counter(
    "platform_webhook_deliveries_total",
    "Webhook deliveries taken in, by provider and outcome (the webhook stats' categories:"
    " accepted, duplicate, auth_failed, invalid_payload, none for an inactive webhook).",
    ["provider", "outcome"],
)
WORKER_JOBS = Counter(
    "platform_worker_jobs_total",
    "Queue jobs the worker ended, by function and outcome (done, retry, dead_letter).",
    ["function", "outcome"],
)
EXECUTIONS_WAITING = Counter(
    "platform_worker_executions_waiting_on_tracking_total",
    "Trigger executions put off because tracking could not take the run yet (retried later).",
)
EXECUTIONS_GIVEN_UP = Counter(
    "platform_worker_executions_given_up_total",
    "Trigger executions failed because tracking stayed unavailable past the retry horizon.",
)
