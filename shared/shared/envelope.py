"""The reference's response envelope, written once: every resource the platform serves
in ZenML's shape answers ``{"body", "metadata", "resources", "id", "permission_denied"}``
(and ``name``, for a named resource), keys in this order, ``metadata`` only when
hydrated. A response model names its three parts::

    class WebhookResponse(NamedEnvelope[WebhookBody, WebhookMetadata, WebhookResources]):
        pass

A model adds what its resource has besides (an optional ``name``, say) as fields of its
own, which come after the envelope's.
"""

from __future__ import annotations

import uuid
from typing import Generic, TypeVar

from pydantic import BaseModel

__all__ = ["Envelope", "EnvelopeParts", "NamedEnvelope"]

Body = TypeVar("Body")
Metadata = TypeVar("Metadata")
Resources = TypeVar("Resources")


class EnvelopeParts(BaseModel, Generic[Body, Metadata, Resources]):
    """The three parts alone (the server's settings have no id)."""

    body: Body | None = None
    metadata: Metadata | None = None
    resources: Resources | None = None


class Envelope(EnvelopeParts[Body, Metadata, Resources], Generic[Body, Metadata, Resources]):
    """A resource's envelope: its parts, its id and ``permission_denied``."""

    id: uuid.UUID
    permission_denied: bool = False


class NamedEnvelope(Envelope[Body, Metadata, Resources], Generic[Body, Metadata, Resources]):
    """A named resource's envelope."""

    name: str
