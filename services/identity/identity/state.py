"""What identity's handlers read of the lifespan's state, typed (see :mod:`shared.state`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from shared.state import StoreState

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from identity.server_settings.service import TrackingOnboarding, UserActivity
    from identity.settings import Settings
    from identity.signing_key.service import KeyRing
    from shared.auth import APIKeyTokens, WorkloadScopes
    from shared.db import Clock

__all__ = ["IdentityState"]


@dataclass(frozen=True, slots=True)
class IdentityState(StoreState):
    settings: Settings
    engine: AsyncEngine
    clock: Clock
    keyring: KeyRing
    workload_scopes: WorkloadScopes
    api_key_tokens: APIKeyTokens
    onboarding: TrackingOnboarding
    user_activity: UserActivity
