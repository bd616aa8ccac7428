from __future__ import annotations

import uuid
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class APITokenType(StrEnum):
    GENERIC = "generic"
    WORKLOAD = "workload"


class APITokenQuery(BaseModel):
    """``GET /api/v1/api_token``. A lifetime of zero or less is refused (the reference
    accepted it and issued an already expired token)."""

    model_config = ConfigDict(extra="ignore")

    token_type: APITokenType = APITokenType.GENERIC
    # 0 asks for the server's default lifetime, as the reference reads it; below zero
    # would issue a token already expired.
    expires_in: int | None = Field(default=None, ge=0, description="Lifetime in seconds")
    schedule_id: uuid.UUID | None = None
    pipeline_run_id: uuid.UUID | None = None
    deployment_id: uuid.UUID | None = None
