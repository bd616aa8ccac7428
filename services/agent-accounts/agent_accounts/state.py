"""What agent-accounts' handlers and its authentication read of the lifespan's state, typed
(see :mod:`shared.state`)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shared.state import StoreState

if TYPE_CHECKING:
    from agent_accounts.core.tokens import TokenIssuer
    from agent_accounts.settings import Settings
    from shared.auth import TokenVerifier
    from shared.db import Clock

__all__ = ["AgentState"]


@dataclass(frozen=True, slots=True)
class AgentState(StoreState):
    settings: Settings
    clock: Clock
    verifier: TokenVerifier
    issuer: TokenIssuer
    default_account_id: uuid.UUID
