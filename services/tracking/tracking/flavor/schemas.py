"""A flavor's response: the reference's envelope, the config schema when hydrated."""

from __future__ import annotations

import uuid

from pydantic import BaseModel

from tracking.component.flavors import Flavor
from tracking.component.schemas import (
    FlavorResponse,
    FlavorResponseMetadata,
    FlavorResponseResources,
    nested_flavor,
)


class FlavorListQuery(BaseModel):
    """``scope_user``: only flavors this user made (none: every flavor here is built in)."""

    scope_user: uuid.UUID | None = None


def flavor_response(flavor: Flavor, hydrate: bool) -> FlavorResponse:
    """Built-in flavors have no creator; ``resources`` is there all the same."""
    update: dict[str, object] = {"resources": FlavorResponseResources()}
    if hydrate:
        update["metadata"] = FlavorResponseMetadata(
            config_schema=flavor.config_schema(),
            docs_url=flavor.docs_url,
            sdk_docs_url=flavor.sdk_docs_url,
        )
    return nested_flavor(flavor).model_copy(update=update)
