"""Artifact stores: where artifact versions' data lives, read through the stack
component that describes the store.

:class:`ArtifactStores` (one per process, in the app's state) opens the store a component
describes; it is the only place that looks at a component's flavor. What the server
touches for a user is bounded here: a local store only inside the operator's roots
(:mod:`tracking.store.local`), an S3 store only at addresses the operator's policy allows
(:mod:`tracking.store.egress`) and with the store's own credentials. S3 clients are kept
per component and configuration (its ``updated`` time), so requests share their
connections and a changed component gets a new client.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from obstore.exceptions import BaseError
from obstore.store import S3Store

from shared.errors import PlatformError
from tracking.component.secrets import ComponentSecrets
from tracking.store.base import (
    ArtifactStore,
    Entry,
    LocalFilesRefused,
    MissingFile,
    OutsideStore,
)
from tracking.store.local import LocalArtifactStore, real_roots
from tracking.store.s3 import S3ArtifactStore, S3Options, s3_client

ARTIFACT_STORE = "artifact_store"
CLIENTS_KEPT = 64


class StoreUnsupported(PlatformError):
    """The store's flavor cannot be read by this server (the reference's 501)."""

    status_code = 501
    wire_name = "NotImplementedError"


class ArtifactStores:
    def __init__(
        self, secrets: ComponentSecrets, options: S3Options, local_roots: Sequence[Path]
    ) -> None:
        """``local_roots``: the directories local stores may read (the operator's)."""
        self.secrets = secrets
        self.options = options
        self.local_roots = real_roots(local_roots)
        self._clients: OrderedDict[tuple[Any, ...], S3Store] = OrderedDict()

    def open(self, component: Any) -> ArtifactStore:
        """The store a component (its row) describes (501 when this server cannot open it)."""
        if component.type == ARTIFACT_STORE and component.flavor == "local":
            path = Path(component.configuration["path"])
            return LocalArtifactStore(component.name, path, self.local_roots)
        if component.type == ARTIFACT_STORE and component.flavor == "s3":
            path = component.configuration["path"]
            return S3ArtifactStore(component.name, path, self._s3_client(component))
        raise StoreUnsupported(
            f"Artifact store '{component.name}' of flavor '{component.flavor}' cannot be "
            "read by this server."
        )

    def _s3_client(self, component: Any) -> S3Store:
        key = (component.id, component.updated)
        client = self._clients.get(key)
        if client is None:
            secrets = self.secrets.reveal(component)
            try:
                client = s3_client(component.configuration, secrets, self.options)
            except BaseError as exc:
                raise PlatformError(
                    f"Artifact store '{component.name}' cannot be opened: {exc}"
                ) from None
            self._clients[key] = client
            if len(self._clients) > CLIENTS_KEPT:
                self._clients.popitem(last=False)
        else:
            self._clients.move_to_end(key)
        return client


__all__ = [
    "ARTIFACT_STORE",
    "ArtifactStore",
    "ArtifactStores",
    "Entry",
    "LocalArtifactStore",
    "LocalFilesRefused",
    "MissingFile",
    "OutsideStore",
    "S3ArtifactStore",
    "StoreUnsupported",
]
