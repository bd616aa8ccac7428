"""The tokens this trust domain signs: their kinds (session, worker, task) and the issuer
that signs them. A leaf of the service's imports: its typed state names the issuer."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agent_accounts.models import Task
from agent_accounts.settings import Settings
from shared.auth import TokenSigner
from shared.db import Clock

__all__ = ["ALL_KINDS", "AgentTokenKind", "SignedToken", "TokenIssuer"]


class AgentTokenKind(StrEnum):
    SESSION = "session"
    WORKER = "worker"
    TASK = "task"


ALL_KINDS = tuple(AgentTokenKind)


@dataclass(frozen=True)
class SignedToken:
    token: str
    expires_at: dt.datetime
    lifetime: dt.timedelta


class TokenIssuer:
    """Signs this trust domain's session, worker and task tokens."""

    def __init__(self, signer: TokenSigner, settings: Settings, clock: Clock) -> None:
        self.signer = signer
        self.settings = settings
        self.clock = clock

    def _issue(
        self, subject: str, kind: AgentTokenKind, lifetime: dt.timedelta, extra: Mapping[str, Any]
    ) -> SignedToken:
        now = self.clock()
        token, claims = self.signer.issue(
            subject=subject,
            kind=kind,
            audience=self.settings.jwt_audience,
            lifetime=lifetime,
            extra={k: v for k, v in extra.items() if v is not None},
            now=now,
        )
        expires_at = dt.datetime.fromtimestamp(claims["exp"], dt.UTC)
        return SignedToken(token, expires_at, expires_at - now)

    def session(
        self,
        account_id: uuid.UUID,
        *,
        api_key_id: uuid.UUID | None = None,
        device_id: uuid.UUID | None = None,
        expires_at: dt.datetime | None = None,
    ) -> SignedToken:
        lifetime = self.settings.session_token_lifetime
        if expires_at is not None:
            lifetime = min(lifetime, expires_at - self.clock())
        return self._issue(
            f"account:{account_id}",
            AgentTokenKind.SESSION,
            lifetime,
            {"api_key_id": api_key_id, "device_id": device_id},
        )

    def worker(
        self, worker_id: uuid.UUID, account_id: uuid.UUID, api_key_id: uuid.UUID | None
    ) -> SignedToken:
        return self._issue(
            f"worker:{worker_id}",
            AgentTokenKind.WORKER,
            self.settings.worker_token_lifetime,
            {"account_id": account_id, "api_key_id": api_key_id},
        )

    def task(self, task: Task, worker_id: uuid.UUID) -> SignedToken:
        grants = {
            kind: sorted(ids)
            for kind, ids in (("session", task.session_ids), ("blob", task.blob_ids))
            if ids
        }
        lifetime = (
            dt.timedelta(seconds=task.timeout_seconds) + self.settings.task_token_expiry_leeway
        )
        return self._issue(
            f"task:{task.id}",
            AgentTokenKind.TASK,
            lifetime,
            {
                "attempt": task.attempt,
                "worker_id": worker_id,
                "account_id": task.owner_id,
                "grants": grants,
            },
        )
