"""The dashboard's onboarding checklist, as identity and tracking speak of it.

Identity answers ``GET /api/v1/onboarding_state``; the steps that follow from tracking's
data it asks of tracking's internal ``GET {ONBOARDING_PATH}`` (a service token only; the
gateway does not route it), which answers a JSON list of :class:`OnboardingStep` values.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ONBOARDING_PATH", "OnboardingStep"]

ONBOARDING_PATH = "/internal/v1/onboarding_state"
"""Tracking's internal route: the completed steps its data shows (a JSON list of names)."""


class OnboardingStep(StrEnum):
    """The steps the dashboard's checklist shows (zenml 0.96.3's ``OnboardingStep``)."""

    DEVICE_VERIFIED = "device_verified"
    PROJECT_CREATED = "project_created"
    PIPELINE_RUN = "pipeline_run"
    STACK_WITH_REMOTE_ORCHESTRATOR_CREATED = "stack_with_remote_orchestrator_created"
    STACK_WITH_REMOTE_ARTIFACT_STORE_CREATED = "stack_with_remote_artifact_store_created"
    PIPELINE_RUN_WITH_REMOTE_ORCHESTRATOR = "pipeline_run_with_remote_orchestrator"
    PIPELINE_RUN_WITH_REMOTE_ARTIFACT_STORE = "pipeline_run_with_remote_artifact_store"
    PIPELINE_DEPLOYED = "pipeline_deployed"
    OSS_ONBOARDING_COMPLETED = "oss_onboarding_completed"
    PRO_ONBOARDING_COMPLETED = "pro_onboarding_completed"
