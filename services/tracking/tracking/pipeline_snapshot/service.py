"""A snapshot's code, as the dashboard offers it for download: the archive the client
uploaded to the snapshot's stack's artifact store (``code_path``), read from that store
within its confinement rules and at most ``download_size_limit`` bytes."""

from __future__ import annotations

import uuid
from typing import NamedTuple

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.errors import BadRequest, Forbidden, NotFound
from tracking.pipeline.service import SnapshotService
from tracking.pipeline_snapshot.repository import SnapshotStoreRepository
from tracking.store import ArtifactStores
from tracking.store.base import ArtifactStore, Entry


class SnapshotCode(NamedTuple):
    store: ArtifactStore
    entry: Entry


class SnapshotCodeService:
    def __init__(self, session: AsyncSession, stores: ArtifactStores) -> None:
        self.snapshots = SnapshotService(session)
        self.repository = SnapshotStoreRepository(session)
        self.stores = stores

    async def code(self, snapshot_id: uuid.UUID, limit: int) -> SnapshotCode:
        """The snapshot's code archive, checked: named, in its stack's artifact store,
        present, a file, at most ``limit`` bytes (errors as the reference's)."""
        snapshot = (await self.snapshots.get(snapshot_id)).snapshot
        if not snapshot.code_path:
            raise BadRequest(f"Snapshot {snapshot_id} has no code path.")
        component = None
        if snapshot.stack_id is not None:
            component = await self.repository.artifact_store(snapshot.stack_id)
        if component is None:
            raise BadRequest(f"Snapshot {snapshot_id} has no stack.")
        store = self.stores.open(component)
        entries = [entry async for entry in store.walk(snapshot.code_path)]
        files = [entry for entry in entries if not entry.is_dir]
        if len(entries) != 1 or not files:
            raise NotFound(f"The file '{snapshot.code_path}' does not exist.")
        if files[0].size > limit:
            raise Forbidden(
                f"The file '{snapshot.code_path}' is too large to be downloaded. The maximum "
                f"download size allowed by your ZenML server is {limit} bytes."
            )
        return SnapshotCode(store, files[0])
