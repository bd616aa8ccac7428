"""Business rules for webhook triggers."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from redis.exceptions import RedisError
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.auth import ensure_admin
from shared.db import flush_unique, utcnow
from shared.errors import Conflict, NotFound, ServiceUnavailable
from shared.listing import Listing
from webhooks.core.auth import Actor, require_owner
from webhooks.core.projects import Project
from webhooks.event.queue import JobQueue
from webhooks.intake.providers import Provider
from webhooks.models import TriggerExecution, Webhook, WebhookTrigger
from webhooks.trigger.configuration import normalize
from webhooks.trigger.repository import TriggerRepository
from webhooks.trigger.schemas import WebhookTriggerRequest, WebhookTriggerUpdate
from webhooks.webhook.repository import WebhookRepository


class TriggerNotFound(NotFound):
    def __init__(self, trigger_id: uuid.UUID) -> None:
        super().__init__(
            f"Unable to get webhook trigger with ID '{trigger_id}': "
            "No webhook trigger with this ID found"
        )


class TriggerAlreadyExists(Conflict):
    def __init__(self, name: str, project: object, operation: str = "create") -> None:
        super().__init__(
            f"Unable to {operation} the requested webhook trigger with name '{name}': Found "
            f"another existing webhook trigger with the same name in the '{project}' project."
        )


class TriggerWebhookNotFound(NotFound):
    def __init__(self, reference: str, project: object) -> None:
        super().__init__(f"No webhook '{reference}' in the '{project}' project.")


class TriggerArchived(Conflict):
    def __init__(self) -> None:
        super().__init__("An archived trigger cannot be changed; create a new one.")


class ExecutionNotFound(NotFound):
    def __init__(self, execution_id: uuid.UUID) -> None:
        super().__init__(
            f"Unable to get webhook trigger execution with ID '{execution_id}': "
            "No webhook trigger execution with this ID found for this trigger"
        )


class ExecutionNotRetryable(Conflict):
    def __init__(self, execution: TriggerExecution) -> None:
        if execution.retried_at is not None:
            reason = "was retried once already"
        else:
            reason = f"is {execution.status}; only a failed execution can be retried"
        super().__init__(f"The webhook trigger execution '{execution.id}' {reason}.")


class RetryNotQueued(ServiceUnavailable):
    def __init__(self) -> None:
        super().__init__(
            "The retry cannot be queued right now; nothing changed, retry later.",
            headers={"Retry-After": "5"},
        )


class TriggerService:
    """Changing, archiving and deleting a trigger are for its creator or an admin;
    retrying an execution is for admins (:mod:`webhooks.core.auth`)."""

    def __init__(self, session: AsyncSession, providers: Mapping[str, Provider]) -> None:
        self.session = session
        self.providers = providers
        self.repository = TriggerRepository(session)

    async def _webhook(self, reference: str, project: Project) -> Webhook:
        found = await WebhookRepository(self.session).find(reference, project.id)
        if len(found) != 1 or found[0].project_id != project.id:
            raise TriggerWebhookNotFound(reference, project.name)
        return found[0]

    async def create(
        self, request: WebhookTriggerRequest, user_id: uuid.UUID, project: Project
    ) -> WebhookTrigger:
        webhook = await self._webhook(request.webhook_id, project)
        configuration = normalize(self.providers[webhook.webhook_type], request.configuration)
        trigger = WebhookTrigger(
            project_id=project.id,
            user_id=user_id,
            name=request.name,
            webhook_id=webhook.id,
            snapshot_id=request.snapshot_id,
            configuration=configuration,
            run_configuration=request.run_configuration,
            active=request.active,
            concurrency=request.concurrency,
        )
        self.session.add(trigger)
        await flush_unique(self.session, TriggerAlreadyExists(request.name, project.name))
        return trigger

    async def get(self, trigger_id: uuid.UUID) -> WebhookTrigger:
        trigger = await self.repository.get(trigger_id)
        if trigger is None:
            raise TriggerNotFound(trigger_id)
        return trigger

    async def list_page(
        self, listing: Listing, project_id: uuid.UUID, scope_user: uuid.UUID | None
    ) -> tuple[int, list[WebhookTrigger]]:
        return await self.repository.page(listing, project_id, scope_user)

    async def executions(
        self, listing: Listing, trigger_id: uuid.UUID
    ) -> tuple[int, list[TriggerExecution]]:
        await self.get(trigger_id)
        return await self.repository.executions(listing, trigger_id)

    async def retry_execution(
        self, trigger_id: uuid.UUID, execution_id: uuid.UUID, jobs: JobQueue, actor: Actor
    ) -> TriggerExecution:
        """A failed execution of the trigger pending again, its retry queued (once per
        execution; admins only). The job goes to Redis inside the transaction: Redis out
        of reach fails the request and rolls the change back, and the job waits for the
        commit (:func:`webhooks.event.tasks.retry_execution`)."""
        ensure_admin(actor, "retry a webhook trigger execution")
        await self.get(trigger_id)
        execution = await self.repository.execution(trigger_id, execution_id)
        if execution is None:
            raise ExecutionNotFound(execution_id)
        now = utcnow()
        if not await self.repository.mark_retried(execution_id, now):
            await self.session.refresh(execution)
            raise ExecutionNotRetryable(execution)
        try:
            await jobs.retry_execution(execution_id, now)
        except (RedisError, OSError) as exc:
            raise RetryNotQueued() from exc
        await self.session.refresh(execution)
        return execution

    async def _owned(self, trigger_id: uuid.UUID, actor: Actor, action: str) -> WebhookTrigger:
        """The trigger, if ``actor`` may ``action`` it (its creator or an admin)."""
        trigger = await self.get(trigger_id)
        require_owner(actor, trigger.user_id, "webhook trigger", action)
        return trigger

    async def update(
        self, trigger_id: uuid.UUID, update: WebhookTriggerUpdate, actor: Actor
    ) -> WebhookTrigger:
        trigger = await self._owned(trigger_id, actor, "change it")
        if trigger.is_archived:
            raise TriggerArchived()
        if update.configuration is not None:
            webhook = await self.session.get(Webhook, trigger.webhook_id)
            assert webhook is not None  # only archived triggers lose their webhook
            provider = self.providers[webhook.webhook_type]
            trigger.configuration = normalize(provider, update.configuration)
        for name in ("active", "concurrency", "snapshot_id", "run_configuration"):
            value = getattr(update, name)
            if value is not None:
                setattr(trigger, name, value)
        trigger.updated = utcnow()
        if update.name is not None and update.name != trigger.name:
            trigger.name = update.name
            clash = TriggerAlreadyExists(update.name, trigger.project_id, "update")
            await flush_unique(self.session, clash)
        await self.session.flush()
        return trigger

    async def archive(self, trigger_id: uuid.UUID, actor: Actor) -> None:
        trigger = await self._owned(trigger_id, actor, "archive it")
        trigger.is_archived = True
        trigger.active = False
        trigger.updated = utcnow()
        await self.session.flush()

    async def delete(self, trigger_id: uuid.UUID, actor: Actor) -> None:
        await self.session.delete(await self._owned(trigger_id, actor, "delete it"))
        await self.session.flush()
