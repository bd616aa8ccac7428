"""Artifact stores: where artifact versions' data lives, read through the stack
component that describes the store.

:class:`ArtifactStores` (one per process, in the app's state) opens the store a component
describes; it is the only place that looks at a component's flavor. What the server
touches for a user is bounded here: a local store only inside the operator's roots
(:mod:`tracking.store.local`), an S3 store only at addresses the operator's policy allows
(:mod:`tracking.store.egress`) and with the store's own credentials. S3 clients are kept
per component and configuration (its ``updated`` time), so requests share their
connections and a changed component gets a new client.

A configuration field given as a secret reference (``{{name.key}}``, an s3 store's
``key``, ``secret`` or ``token``) is resolved here, with the secrets the component's owner
may read (public ones, and the owner's private ones: never another user's), at each use:
one query reads what the references name, and the client is kept per component and per
version of those secrets, so a changed secret gets a new client and a client kept is
reused without decrypting anything. A secret or key that is missing answers 404 naming
the field and the secret, never a value.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from obstore.exceptions import BaseError
from obstore.store import S3Store
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.errors import PlatformError
from tracking.component.flavors import flavor_for
from tracking.component.secrets import ComponentSecrets, references
from tracking.secret.service import SecretCipher, SecretLookup, resolve_references
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
        self,
        secrets: ComponentSecrets,
        cipher: SecretCipher,
        options: S3Options,
        local_roots: Sequence[Path],
    ) -> None:
        """``local_roots``: the directories local stores may read (the operator's)."""
        self.secrets = secrets
        self.cipher = cipher
        self.options = options
        self.local_roots = real_roots(local_roots)
        self._clients: OrderedDict[tuple[Any, ...], S3Store] = OrderedDict()

    async def open(self, component: Any, session: AsyncSession) -> ArtifactStore:
        """The store a component (its row) describes (501 when this server cannot open it);
        ``session`` reads the secrets its configuration references."""
        if component.type == ARTIFACT_STORE and component.flavor == "local":
            path = Path(component.configuration["path"])
            return LocalArtifactStore(component.name, path, self.local_roots)
        if component.type == ARTIFACT_STORE and component.flavor == "s3":
            path = component.configuration["path"]
            client = await self._s3_client(component, session)
            return S3ArtifactStore(component.name, path, client)
        raise StoreUnsupported(
            f"Artifact store '{component.name}' of flavor '{component.flavor}' cannot be "
            "read by this server."
        )

    async def _s3_client(self, component: Any, session: AsyncSession) -> S3Store:
        referenced = references(component.configuration)
        found = await SecretLookup(session).referenced(referenced, component.user_id)
        versions = tuple(sorted((row.id, row.updated) for row in found.values()))
        key = (component.id, component.updated, versions)
        client = self._clients.get(key)
        if client is None:
            resolved = resolve_references(referenced, found, self.cipher)
            secret_fields = flavor_for(component.type, component.flavor).secret_fields
            configuration = {**component.configuration, **resolved}
            secrets = {
                **self.secrets.reveal(component),
                **{k: v for k, v in resolved.items() if k in secret_fields},
            }
            try:
                client = s3_client(configuration, secrets, self.options)
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
