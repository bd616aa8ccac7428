"""The onboarding steps tracking's data shows, by zenml 0.96.3's rules
(``SqlZenStore``, where it records each step):

- ``project_created``: a project exists (the reference records it for the default
  project it makes at its first start, as tracking makes one too);
- ``stack_with_remote_orchestrator_created`` / ``stack_with_remote_artifact_store_created``:
  a stack whose orchestrator is not of flavor ``local`` or ``local_docker`` / whose
  artifact store is not ``local``;
- ``pipeline_run``: a run finished; ``pipeline_run_with_remote_orchestrator`` /
  ``pipeline_run_with_remote_artifact_store``: one finished on such a stack;
- ``pipeline_deployed``, ``oss_onboarding_completed`` and ``pro_onboarding_completed``:
  a deployment exists (the reference records all three with any deployment, on an open
  source server too).

The reference records a step when it happens and keeps it; identity keeps what it has
seen (:mod:`identity.server_settings.service`). Tracking answers from what exists now, so a
step whose data was deleted before identity asked is not shown.
"""

from __future__ import annotations

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.onboarding import OnboardingStep
from tracking.component.flavors import StackComponentType
from tracking.onboarding.repository import Flavors, OnboardingRepository

LOCAL_ORCHESTRATORS = Flavors(StackComponentType.ORCHESTRATOR, frozenset({"local", "local_docker"}))
LOCAL_ARTIFACT_STORES = Flavors(StackComponentType.ARTIFACT_STORE, frozenset({"local"}))


class OnboardingService:
    def __init__(self, session: AsyncSession) -> None:
        self.repository = OnboardingRepository(session)

    async def completed(self) -> list[OnboardingStep]:
        """The steps tracking's data shows, in the checklist's order."""
        facts = await self.repository.facts(LOCAL_ORCHESTRATORS, LOCAL_ARTIFACT_STORES)
        shown = {
            OnboardingStep.PROJECT_CREATED: facts.project,
            OnboardingStep.STACK_WITH_REMOTE_ORCHESTRATOR_CREATED: facts.remote_orchestrator_stack,
            OnboardingStep.STACK_WITH_REMOTE_ARTIFACT_STORE_CREATED: (
                facts.remote_artifact_store_stack
            ),
            OnboardingStep.PIPELINE_RUN: facts.finished_run,
            OnboardingStep.PIPELINE_RUN_WITH_REMOTE_ORCHESTRATOR: (
                facts.finished_run_remote_orchestrator
            ),
            OnboardingStep.PIPELINE_RUN_WITH_REMOTE_ARTIFACT_STORE: (
                facts.finished_run_remote_artifact_store
            ),
            OnboardingStep.PIPELINE_DEPLOYED: facts.deployment,
            OnboardingStep.OSS_ONBOARDING_COMPLETED: facts.deployment,
            OnboardingStep.PRO_ONBOARDING_COMPLETED: facts.deployment,
        }
        return [step for step in OnboardingStep if shown.get(step)]
