"""Token kinds and the verified form of a token."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

__all__ = ["TokenKind", "VerifiedToken"]


class TokenKind(StrEnum):
    """The kinds of token the platform's issuer signs (the ``kind`` claim).

    Verifiers take kinds as plain strings, so another trust domain (the agent-run server)
    can define its own kinds without touching this enum.
    """

    ACCESS = "access"
    """A login session: the cookie, and the bearer token of ``/api/v1/login``."""
    DEVICE = "device"
    """A token issued through the OAuth device authorization flow."""
    GENERIC = "generic"
    """A short-lived generic API token (``/api/v1/api_token``)."""
    WORKLOAD = "workload"
    """No expiry; scoped to exactly one pipeline run, schedule or deployment."""
    SERVICE = "service"
    """A service's client-credentials token for service-to-service calls."""
    DOWNLOAD = "download"
    """A short-lived token that authorizes one download."""


def _as_uuid(value: Any) -> UUID | None:
    if not isinstance(value, str):
        return None
    try:
        return UUID(value)
    except ValueError:
        return None


@dataclass(frozen=True)
class VerifiedToken:
    """A token whose signature, issuer, audience, lifetime and kind have been checked.

    It says nothing about revocation; see :class:`shared.auth.RevocationList`.
    """

    # The raw token is a credential; keep it out of reprs that may end up in logs.
    raw: str = field(repr=False)
    claims: Mapping[str, Any]
    subject: str
    kind: str
    jti: str
    issued_at: datetime
    """Aware, UTC."""
    expires_at: datetime | None
    """Aware, UTC; ``None`` for kinds that may live without expiry (workload tokens)."""
    key_id: str

    @property
    def user_id(self) -> UUID | None:
        """The subject as a UUID, or ``None`` when the subject is not a UUID."""
        return _as_uuid(self.subject)

    @property
    def device_id(self) -> UUID | None:
        """The ``device_id`` claim as a UUID, if present and well formed."""
        return _as_uuid(self.claims.get("device_id"))

    @property
    def is_admin(self) -> bool:
        """Whether the token carries ``"admin": true``."""
        return self.claims.get("admin") is True

    @property
    def name(self) -> str | None:
        """The ``name`` claim (the user's or service's name), if it is a string."""
        name = self.claims.get("name")
        return name if isinstance(name, str) else None
