"""Artifact stores: where artifact versions' data lives, read through the stack
component that describes the store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shared.errors import PlatformError
from tracking.store.local import LocalArtifactStore

ARTIFACT_STORE = "artifact_store"


class StoreUnsupported(PlatformError):
    """The store's flavor cannot be read by this server (the reference's 501)."""

    status_code = 501
    wire_name = "NotImplementedError"


def store_for(component: Any) -> LocalArtifactStore:
    """The store a component (its row) describes (501 when this server cannot open it)."""
    if component.type != ARTIFACT_STORE or component.flavor != "local":
        raise StoreUnsupported(
            f"Artifact store '{component.name}' of flavor '{component.flavor}' cannot be "
            "read by this server."
        )
    return LocalArtifactStore(name=component.name, root=Path(component.configuration["path"]))


__all__ = ["ARTIFACT_STORE", "LocalArtifactStore", "StoreUnsupported", "store_for"]
