"""Business rules for webhooks."""

from __future__ import annotations

import secrets
import uuid

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import flush_unique, utcnow
from shared.errors import BadRequest, Conflict, NotFound, Unprocessable
from shared.listing import Listing
from shared.secret_box import SecretBox
from webhooks.core.auth import Actor, require_owner
from webhooks.core.live import LiveState
from webhooks.core.projects import Project
from webhooks.event.repository import EventRepository
from webhooks.intake.providers import WebhookType
from webhooks.models import Webhook
from webhooks.webhook.repository import WebhookRepository
from webhooks.webhook.schemas import WebhookRequest, WebhookUpdate


def new_secret() -> str:
    """A new signing secret: 256 bits, URL-safe (43 characters, as the reference's)."""
    return secrets.token_urlsafe(32)


class WebhookNotFound(NotFound):
    def __init__(self, reference: object) -> None:
        super().__init__(
            f"Unable to get webhook with name, ID or ID prefix '{reference}': "
            "No webhook with this name, ID or ID prefix found"
        )


class WebhookAmbiguous(BadRequest):
    def __init__(self, reference: str) -> None:
        super().__init__(
            f"'{reference}' names more than one webhook; use its full ID or name its project."
        )


class WebhookAlreadyExists(Conflict):
    def __init__(self, name: str, project: str, operation: str = "create") -> None:
        super().__init__(
            f"Unable to {operation} the requested webhook with name '{name}': Found another "
            f"existing webhook with the same name in the '{project}' project."
        )


class WebhookInUse(Conflict):
    def __init__(self) -> None:
        super().__init__("The webhook can not be deleted while non-archived triggers reference it.")


class WebhookService:
    """Changes and deletion are for the webhook's creator or an admin
    (:func:`~webhooks.core.auth.require_owner`). Every change the intake must see at once
    (active, secret, deletion) bumps the row's version and clears the live version in
    Redis inside the transaction, so a Redis failure rolls the change back rather than
    leaving the intake on the old one."""

    def __init__(self, session: AsyncSession, box: SecretBox, live: LiveState) -> None:
        self.session = session
        self.box = box
        self.live = live
        self.repository = WebhookRepository(session)

    async def create(
        self, request: WebhookRequest, user_id: uuid.UUID, project: Project
    ) -> tuple[Webhook, str | None]:
        """The webhook and the generated secret (``None`` when the caller chose one)."""
        if request.webhook_type not in set(WebhookType):
            raise Unprocessable(f"Unsupported webhook type: {request.webhook_type}.")
        if not request.active:
            raise Conflict("A webhook is created active; deactivate it with an update.")
        generated = None if request.secret is not None else new_secret()
        secret = generated or (request.secret.get_secret_value() if request.secret else "")
        webhook = Webhook(
            project_id=project.id,
            user_id=user_id,
            name=request.name,
            webhook_type=request.webhook_type,
            secret_ciphertext=self.box.encrypt(secret),
        )
        self.session.add(webhook)
        await flush_unique(self.session, WebhookAlreadyExists(request.name, project.name))
        return webhook, generated

    async def get(self, reference: str, project_id: uuid.UUID | None = None) -> Webhook:
        found = await self.repository.find(reference, project_id)
        if not found:
            raise WebhookNotFound(reference)
        if len(found) > 1:
            raise WebhookAmbiguous(reference)
        return found[0]

    async def raw_event(
        self, reference: str, project_id: uuid.UUID | None, delivery_id: str
    ) -> bytes:
        """The retained body (gzip-compressed) of the webhook's latest event with
        ``delivery_id`` (see :meth:`EventRepository.raw_body`)."""
        webhook = await self.get(reference, project_id)
        return await EventRepository(self.session).raw_body(webhook.id, delivery_id)

    async def list_page(
        self, listing: Listing, project_id: uuid.UUID, scope_user: uuid.UUID | None
    ) -> tuple[int, list[Webhook]]:
        return await self.repository.page(listing, project_id, scope_user)

    async def update(self, webhook: Webhook, update: WebhookUpdate, actor: Actor) -> Webhook:
        require_owner(actor, webhook.user_id, "webhook", "change it")
        if update.name is not None and update.name != webhook.name:
            webhook.name = update.name
            webhook.updated = utcnow()
            clash = WebhookAlreadyExists(update.name, str(webhook.project_id), "update")
            await flush_unique(self.session, clash)
        if update.active is not None and update.active != webhook.active:
            webhook.active = update.active
            await self._changed(webhook)
        return webhook

    async def rotate_secret(self, webhook: Webhook, secret: str | None, actor: Actor) -> str:
        """The new secret; the old one stops verifying when this commits."""
        require_owner(actor, webhook.user_id, "webhook", "rotate its secret")
        new = secret or new_secret()
        webhook.secret_ciphertext = self.box.encrypt(new)
        await self._changed(webhook)
        return new

    async def delete(self, webhook: Webhook, actor: Actor) -> None:
        require_owner(actor, webhook.user_id, "webhook", "delete it")
        if await self.repository.has_live_triggers(webhook.id):
            raise WebhookInUse()
        await self.repository.detach_archived_triggers(webhook.id)
        await self.live.forget(webhook.id)
        await self.repository.delete(webhook)

    async def _changed(self, webhook: Webhook) -> None:
        webhook.version += 1
        webhook.updated = utcnow()
        await self.session.flush()
        await self.live.forget(webhook.id)
