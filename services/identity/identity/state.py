"""What identity's handlers read of the lifespan's state, typed (see :mod:`shared.state`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from shared.state import ServiceState

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from identity.server_settings.service import TrackingOnboarding, UserActivity
    from identity.settings import Settings
    from identity.signing_key.service import KeyRing
    from shared.auth import APIKeyTokens, RevocationList, WorkloadScopes
    from shared.db import Clock, SessionMaker
    from shared.redis import Keys

__all__ = ["IdentityState"]


@dataclass(frozen=True, slots=True)
class IdentityState(ServiceState):
    settings: Settings
    clock: Clock
    sessionmaker: SessionMaker
    redis: Redis
    keys: Keys
    revocations: RevocationList
    keyring: KeyRing
    workload_scopes: WorkloadScopes
    api_key_tokens: APIKeyTokens
    onboarding: TrackingOnboarding
    user_activity: UserActivity
