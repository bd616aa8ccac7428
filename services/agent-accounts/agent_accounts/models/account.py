from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class Account(SQLModel, table=True):
    """A user (logs in with a password) or a service account (API keys only).

    Accounts are never deleted. ``tokens_valid_after`` is the cutoff a deactivation, an
    activation or a password change sets: every token of the account issued before it
    (session, worker and task tokens) is refused, even after the account is activated
    again, except the one token ``tokens_kept_jti`` names (the session that changed the
    account's own password).
    """

    __tablename__ = "accounts"
    __table_args__ = (UniqueConstraint("name", "is_service_account", name="uq_accounts_name_kind"),)

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    name: str = Field(max_length=255, index=True)
    email: str | None = Field(default=None, max_length=255)
    is_service_account: bool = False
    is_admin: bool = False
    active: bool = True
    password_hash: str | None = Field(default=None, max_length=255)
    # SHA-256 of the one-time activation token, and when that token stops working.
    activation_token_hash: str | None = Field(default=None, max_length=64)
    activation_expires_at: dt.datetime | None = None
    account_metadata: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column("metadata", JSON, nullable=False)
    )
    created_by: uuid.UUID | None = None
    tokens_valid_after: dt.datetime | None = None
    tokens_kept_jti: str | None = Field(default=None, max_length=64)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow, index=True)
