from __future__ import annotations

import datetime as dt

from sqlalchemy import LargeBinary
from sqlmodel import Field, SQLModel

from shared.db import utcnow


class SigningKey(SQLModel, table=True):
    """An Ed25519 key that signs identity's tokens. The private half is stored encrypted
    (Fernet). A new key is published at once but signs only from ``activates_at``, so every
    verifier can learn it first; the newest active key signs, and a superseded key keeps
    verifying until ``expires_at``."""

    __tablename__ = "signing_keys"

    kid: str = Field(primary_key=True, max_length=64)
    algorithm: str = Field(default="EdDSA", max_length=16)
    private_key_encrypted: bytes = Field(sa_type=LargeBinary)
    public_jwk: str  # JSON text of the public JWK
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    activates_at: dt.datetime = Field(default_factory=utcnow, index=True)
    superseded_at: dt.datetime | None = None
    expires_at: dt.datetime | None = None
