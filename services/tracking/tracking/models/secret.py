from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import Column, Index, Text, text
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class Secret(SQLModel, table=True):
    """A named set of key-value secrets. ``encrypted_values`` is one Fernet token (keys
    from COMPONENT_SECRET_KEYS) of the values as a JSON object; nothing else holds them.

    Names follow the reference's scoping: a public name is unique among public secrets,
    a private one among its owner's private secrets (two partial unique indexes)."""

    __tablename__ = "secrets"
    __table_args__ = (
        Index(
            "uq_secrets_public_name",
            "name",
            unique=True,
            postgresql_where=text("NOT private"),
        ),
        Index(
            "uq_secrets_private_name",
            "user_id",
            "name",
            unique=True,
            postgresql_where=text("private"),
        ),
        # The default page order (created, id), and the visibility condition of lists.
        Index("ix_secrets_created_id", "created", "id"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    name: str = Field(max_length=255, index=True)
    private: bool = False
    encrypted_values: str = Field(sa_column=Column(Text, nullable=False))
    user_id: uuid.UUID = Field(index=True)
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)
