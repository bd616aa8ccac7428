"""The webhooks service's settings (the web service and its worker read the same)."""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from shared.secret_box import SecretBox
from shared.settings import ServiceSettings


class Settings(ServiceSettings):
    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False)

    service_name: str = "webhooks"
    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/webhooks"

    # Fernet keys (comma-separated) encrypting the webhooks' signing secrets at rest. The
    # first encrypts; all decrypt, so a new key goes in front and the old one is dropped
    # once `python -m webhooks.reencrypt` has rewritten every secret under the new one.
    webhook_secret_keys: SecretStr

    # The public base of the platform API (`https://host/api/v1`), for `endpoint_url`;
    # unset, `endpoint_url` is null, as the reference's.
    server_api_url: str | None = None

    # Projects and pipeline snapshots live in tracking (`tracking_url`, a shared setting).
    project_cache_ttl: timedelta = timedelta(seconds=60)

    # The largest request body, deliveries included: GitHub sends payloads up to 25 MB
    # (larger events are not sent), so the intake takes them all. The gateway's limit on
    # this service's routes is the same (deploy/stack.toml).
    max_body_size: int = Field(default=25 * 1024 * 1024, ge=1024)

    # Intake: a delivery's retries and replays (the same key: what its signature covers)
    # are answered 2xx and not enqueued again while its event waits or runs, and for this
    # window after it finished (the consumer also dedupes by event id, without a window).
    delivery_dedupe_window: timedelta = timedelta(hours=1)
    # Slack-style signed timestamps may be this far from now, in both directions.
    signature_tolerance: timedelta = timedelta(seconds=300)
    # An event not started by a worker within this long fails as expired (arq's `_expires`,
    # the job key's TTL from its receipt); it must outlast the retry horizon (checked).
    event_expiry: timedelta = timedelta(days=7)

    # The worker (arq). A job not finished after `worker_job_timeout` is cancelled and
    # retried; a job whose worker died is retried once its lease (timeout + margin) lapses.
    worker_job_timeout: timedelta = timedelta(seconds=20)
    worker_lease_margin: timedelta = timedelta(seconds=10)
    # Jobs run at once, and so the most one claim takes (webhooks.event.batch_worker):
    # enough that a claim's round trip is shared by dozens of cheap jobs; few enough that
    # jobs matching triggers wait little for the database pool and tracking.
    worker_max_jobs: int = Field(default=50, ge=1, le=1000)
    # How long the worker sleeps after a claim found fewer due jobs than free slots;
    # while claims fill every slot it claims again without sleeping.
    worker_poll_delay: timedelta = timedelta(milliseconds=200)
    # A transient failure (tracking unreachable or answering 5xx, 408, 425, 429 or a 409
    # with Retry-After, a timeout, the database out of reach; webhooks.event.dispatch) is
    # tried again after a delay starting at `worker_retry_delay` and doubling each try up
    # to `worker_retry_max_delay`, with jitter, until `worker_retry_horizon` after the
    # event was accepted (or an admin asked for a retry): counted in time, not tries
    # (webhooks.event.retry).
    worker_retry_delay: timedelta = timedelta(seconds=2)
    worker_retry_max_delay: timedelta = timedelta(minutes=5)
    worker_retry_horizon: timedelta = timedelta(hours=24)
    # How long the worker trusts its copy of a webhook's triggers: a trigger changed (or
    # deactivated) takes effect on events processed this much later at the most.
    worker_trigger_cache_ttl: timedelta = timedelta(seconds=2)

    @field_validator("webhook_secret_keys")
    @classmethod
    def _valid_keys(cls, value: SecretStr) -> SecretStr:
        SecretBox(value)  # raises ValueError on an empty list or a malformed key
        return value

    @model_validator(mode="after")
    def _jobs_outlast_their_retries(self) -> Settings:
        if not timedelta(0) < self.worker_retry_delay <= self.worker_retry_max_delay:
            raise ValueError(
                "WORKER_RETRY_DELAY must be positive and at most WORKER_RETRY_MAX_DELAY"
            )
        # The last try may start up to a lease after the horizon (a killed worker's job);
        # a job key expiring before then would drop the event unrecorded.
        last_try = (
            self.worker_retry_horizon
            + self.worker_retry_max_delay
            + self.worker_job_timeout
            + self.worker_lease_margin
        )
        if self.event_expiry <= last_try:
            raise ValueError(
                "EVENT_EXPIRY must exceed WORKER_RETRY_HORIZON + WORKER_RETRY_MAX_DELAY + "
                "WORKER_JOB_TIMEOUT + WORKER_LEASE_MARGIN: an event retried until its horizon "
                "must not expire in Redis first"
            )
        return self

    @property
    def queue_name(self) -> str:
        """The arq queue of accepted events, inside the stack's Redis namespace."""
        return f"{self.redis_namespace}:webhooks:events"
