"""What webhooks' handlers read of the lifespan's state, typed (see :mod:`shared.state`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from shared.state import ServiceState

if TYPE_CHECKING:
    from shared.secret_box import SecretBox
    from webhooks.core.live import LiveState
    from webhooks.core.projects import ProjectDirectory
    from webhooks.event.queue import JobQueue
    from webhooks.intake.providers import Provider
    from webhooks.intake.service import IntakeService
    from webhooks.settings import Settings

__all__ = ["WebhooksState"]


@dataclass(frozen=True, slots=True)
class WebhooksState(ServiceState):
    settings: Settings
    box: SecretBox
    live: LiveState
    jobs: JobQueue
    providers: dict[str, Provider]
    intake: IntakeService
    projects: ProjectDirectory
