"""What agent-accounts' handlers and its authentication read of the lifespan's state, typed
(see :mod:`shared.state`)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shared.state import ServiceState

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from agent_accounts.core.auth import TokenIssuer
    from agent_accounts.settings import Settings
    from shared.auth import RevocationList, TokenVerifier
    from shared.db import Clock, SessionMaker
    from shared.redis import Keys

__all__ = ["AgentState"]


@dataclass(frozen=True, slots=True)
class AgentState(ServiceState):
    settings: Settings
    clock: Clock
    sessionmaker: SessionMaker
    redis: Redis
    keys: Keys
    revocations: RevocationList
    verifier: TokenVerifier
    issuer: TokenIssuer
    default_account_id: uuid.UUID
